"""`provider="openai-responses"` end to end: a `Client` and the `toolreel run` command talk
to a small Responses API server on 127.0.0.1 through the real HTTP driver and codec."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from toolreel.adapters import HttpModel, ResponsesCodec, Secret
from toolreel.cli import cli
from toolreel.core import Finish, ToolCall
from toolreel.core.notices import TextStreamed, ToolCallAnnounced
from toolreel.shell import AgentOptions, Client, tool
from toolreel.shell.scripted._local import LocalServer, Request

ENCRYPTED = "gAAAAB-opaque-reasoning"


@tool("add", "Add two numbers", {"a": int, "b": int})
async def add(args: dict[str, int]) -> dict[str, int]:
    """a + b."""
    return {"result": args["a"] + args["b"]}


#: The tools `toolreel run --tools test_responses_http:TOOLS` loads.
TOOLS = [add]


def events(*payloads: dict[str, Any]) -> bytes:
    """A Responses event stream: one named event per payload."""
    return b"".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads)


def call_reply(a: int, b: int) -> bytes:
    """Reasoning (with encrypted content), then a call of `add`, streamed."""
    reasoning = {"id": "rs_9", "type": "reasoning", "summary": [], "encrypted_content": ENCRYPTED}
    call = {"id": "fc_9", "type": "function_call", "call_id": "call_9", "name": "add"}
    arguments = json.dumps({"a": a, "b": b})
    return events(
        {"type": "response.created", "response": {"status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**reasoning}},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.added", "output_index": 1, "item": call},
        *(
            {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": piece}
            for piece in (arguments[:5], arguments[5:])
        ),
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {**call, "arguments": arguments},
        },
        {
            "type": "response.completed",
            "response": {"status": "completed", "usage": {"input_tokens": 20, "output_tokens": 9}},
        },
    )


def text_reply(text: str) -> bytes:
    """A streamed text answer."""
    return events(
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message"}},
        *(
            {"type": "response.output_text.delta", "output_index": 0, "delta": word}
            for word in text.split(" ")[:1] + [" " + w for w in text.split(" ")[1:]]
        ),
        {
            "type": "response.completed",
            "response": {"status": "completed", "usage": {"input_tokens": 30, "output_tokens": 4}},
        },
    )


QUOTA = events(
    {
        "type": "error",
        "code": "insufficient_quota",
        "message": "You exceeded your current quota",
    }
)


class ResponsesServer:
    """Answers each POST with the next scripted stream; keeps what was asked."""

    def __init__(self, replies: Sequence[bytes]) -> None:
        """Serve `replies` in order."""
        self.replies = list(replies)
        self.requests: list[Request] = []
        self._server = LocalServer(self._answer)

    @property
    def url(self) -> str:
        """The base URL, as the official SDK's (`.../v1`)."""
        return f"http://127.0.0.1:{self._server.port}/v1"

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies received."""
        return [json.loads(request.body) for request in self.requests]

    async def _answer(self, request: Request, writer: asyncio.StreamWriter) -> bool:
        """One scripted stream, whole, with its length."""
        body = self.replies[len(self.requests)]
        self.requests.append(request)
        head = f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len(body)}"
        writer.write(head.encode() + b"\r\n\r\n" + body)
        await writer.drain()
        return True

    def __enter__(self) -> ResponsesServer:
        """Start serving."""
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop serving."""
        self._server.stop()


@pytest.fixture
def tool_round() -> Iterator[ResponsesServer]:
    with ResponsesServer([call_reply(25, 17), text_reply("The answer is 42.")]) as server:
        yield server


def test_client_runs_a_tool_round_over_the_responses_api(tool_round: ResponsesServer) -> None:
    options = AgentOptions(
        provider="openai-responses",
        model="gpt-5-mini",
        base_url=tool_round.url,
        api_key="sk-test",
        tools=[add],
        auto_execute_tools=True,
    )

    async def main() -> list[Any]:
        async with Client(options) as client:
            await client.query("What is 25 + 17?")
            return [item async for item in client.events()]

    items = anyio.run(main)
    calls = [item.call for item in items if isinstance(item, ToolCallAnnounced)]
    assert calls == [ToolCall(id="call_9", name="add", arguments='{"a": 25, "b": 17}')]
    assert isinstance(items[-1], Finish) and items[-1].text == "The answer is 42."
    assert [r.path for r in tool_round.requests] == ["/v1/responses", "/v1/responses"]
    assert tool_round.requests[0].headers["authorization"] == "Bearer sk-test"
    first, second = tool_round.bodies()
    assert first["store"] is False and first["stream"] is True
    assert first["include"] == ["reasoning.encrypted_content"]
    # Stateless: the whole conversation again, the reasoning item carried back before its call.
    assert second["input"] == [
        {"role": "user", "content": "What is 25 + 17?"},
        {"type": "reasoning", "id": "rs_9", "encrypted_content": ENCRYPTED, "summary": []},
        {
            "type": "function_call",
            "call_id": "call_9",
            "name": "add",
            "arguments": '{"a": 25, "b": 17}',
        },
        {"type": "function_call_output", "call_id": "call_9", "output": '{"result": 42}'},
    ]


def test_toolreel_run_with_the_responses_provider(tool_round: ResponsesServer) -> None:
    args = ["run", "What is 25 + 17?", "--provider", "openai-responses", "--base-url"]
    args += [tool_round.url, "--model", "gpt-5-mini", "--tools", "test_responses_http:TOOLS"]
    result = CliRunner().invoke(cli, args, env={"OPENAI_API_KEY": "sk-from-env"})
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        '→ add {"a": 25, "b": 17}',
        '  ← add: {"result": 42}',
        "The answer is 42.",
    ]
    assert tool_round.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_an_error_event_in_a_200_stream_ends_the_run_with_its_message() -> None:
    with ResponsesServer([QUOTA]) as server:
        args = ["run", "hi", "--provider", "openai-responses", "--base-url", server.url]
        result = CliRunner().invoke(cli, [*args, "--model", "gpt-5-mini", "--api-key", "sk-x"])
    assert result.exit_code == 1
    assert "You exceeded your current quota (code=insufficient_quota)" in result.stderr
    assert len(server.requests) == 1  # out of credit: not asked again


def test_codec_options_reach_the_wire_through_a_client_model() -> None:
    """The providers guide's recipe: reasoning settings on the codec, the model to the Client."""
    with ResponsesServer([text_reply("Hi.")]) as server:
        codec = ResponsesCodec(reasoning_effort="high", reasoning_summary="auto")
        model = HttpModel(codec, base_url=server.url, api_key=Secret("sk-test"))
        options = AgentOptions(provider="openai-responses", model="o4-mini", base_url=server.url)

        async def main() -> str:
            try:
                async with Client(options, model=model) as client:
                    await client.query("hello")
                    items = [item async for item in client.events()]
            finally:
                await model.aclose()  # a model given to the Client is its giver's to close
            return "".join(item.text for item in items if isinstance(item, TextStreamed))

        assert anyio.run(main) == "Hi."
        [body] = server.bodies()
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["model"] == "o4-mini"
