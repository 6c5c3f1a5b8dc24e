"""JSON on the wire: request bodies and stream chunks as the standard library makes them."""

from __future__ import annotations

import json

import anyio
import httpx2

from toolreel.adapters import HttpModel, OpenAICodec, Secret
from toolreel.core import ChatMessage, ModelRequest, TextDelta, ToolSpec

HUGE = 2**70  # past 64 bits: orjson refuses it, the standard library does not


def user(text: str) -> ChatMessage:
    """A user message."""
    return ChatMessage(role="user", content=text)


def test_a_request_body_is_the_compact_utf8_json_httpx_would_send() -> None:
    sent: list[httpx2.Request] = []

    def serve(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        body = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        return httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})

    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": HUGE}}}
    tools = (ToolSpec(name="count", parameters=schema),)
    codec = OpenAICodec()
    for request in (
        ModelRequest(model="m", system=None, messages=(user("héllo ☃"),), tools=()),
        ModelRequest(model="m", system="Count.", messages=(user("n?"),), tools=tools),
    ):
        model = HttpModel(codec, api_key=Secret("sk-test"), transport=httpx2.MockTransport(serve))

        async def call(model: HttpModel = model, request: ModelRequest = request) -> None:
            async for _ in model.stream(request):
                pass
            await model.aclose()

        anyio.run(call)
        expected = json.dumps(
            codec.encode(request, stream=True),
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,
        ).encode()
        assert sent[-1].content == expected
        assert sent[-1].headers["content-type"] == "application/json"
        assert sent[-1].headers["content-length"] == str(len(expected))


def test_a_stream_chunk_only_the_standard_library_reads_still_decodes() -> None:
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":NaN}],'
        b'"seed":' + str(HUGE).encode() + b"}\n\n"
    )
    decoder = OpenAICodec().stream_decoder()
    assert decoder.feed(body)[0] == TextDelta(text="Hi")
