"""`openai_sdk_model(client)`: the model port over an `openai.AsyncOpenAI`-shaped client.

Against the real SDK talking to the scripted server on 127.0.0.1, and against
stub clients (what open_agent's users and tests patch in).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import anyio
import attrs
import httpx2
import openai
import pytest

from toolreel.adapters import http_model, openai_sdk_model
from toolreel.core import (
    ChatMessage,
    ConfigError,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolSpec,
    Usage,
)
from toolreel.shell import run, tool
from toolreel.testing import MakeScriptedModel, cut_off, http_error, text, tool_calls

ADD = ToolSpec(name="add", parameters={"type": "object", "properties": {"a": {"type": "number"}}})
REQUEST = ModelRequest(
    model="scripted",
    system="You add.",
    messages=(ChatMessage(role="user", content="What is 1 plus 2?"),),
    tools=(ADD,),
)


def calls_of(port: Any, count: int) -> list[list[ModelEvent]]:
    """The events of `count` calls through `port`, in one event loop (a client's pool is bound
    to the loop it first ran in)."""

    async def collect() -> list[list[ModelEvent]]:
        try:
            return [[event async for event in port.stream(REQUEST)] for _ in range(count)]
        finally:
            await closed(port)

    return anyio.run(collect)


async def closed(port: Any) -> None:
    """Close a real SDK client in the loop it ran in: left to the garbage collector, its
    `__del__` schedules the close on whatever loop runs then (a later test's), where the
    old loop's connections fail it with "Event loop is closed"."""
    if isinstance(getattr(port, "client", None), openai.AsyncOpenAI):
        await port.client.close()


def events_of(port: Any) -> list[ModelEvent]:
    """Every event of one call through `port`."""
    [events] = calls_of(port, 1)
    return events


def sdk_client(url: str) -> openai.AsyncOpenAI:
    """The official client pointed at the scripted server, with no retries of its own."""
    return openai.AsyncOpenAI(base_url=url, api_key="sk-secret-x", max_retries=0)


def joined(events: list[ModelEvent]) -> str:
    """The text the events stream."""
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def test_streamed_text_through_the_sdk_decodes_like_the_httpx_driver(
    scripted_model: MakeScriptedModel,
) -> None:
    scripted = scripted_model([text("One plus two is three.")])
    assert scripted.server is not None
    events = events_of(openai_sdk_model(sdk_client(scripted.server.url)))

    assert joined(events) == "One plus two is three."
    assert events[-1] == ModelResponded(
        finish_reason="stop", usage=Usage(input_tokens=10, output_tokens=5)
    )
    [body] = scripted.requests
    assert body["stream"] is True
    assert body["messages"][0] == {"role": "system", "content": "You add."}
    assert body["tools"][0]["function"]["name"] == "add"


def test_streamed_tool_calls_through_the_sdk(scripted_model: MakeScriptedModel) -> None:
    scripted = scripted_model([tool_calls(("call_1", "add", {"a": 1, "b": 2}))])
    assert scripted.server is not None
    events = events_of(openai_sdk_model(sdk_client(scripted.server.url)))

    assert events[0] == ToolCallStarted(index=0, call_id="call_1", name="add")
    fragments = [e.fragment for e in events if isinstance(e, ToolCallArgumentsDelta)]
    assert json.loads("".join(fragments)) == {"a": 1, "b": 2}
    assert isinstance(events[-1], ModelResponded)
    assert events[-1].finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [True, False])
def test_tool_call_recovery_turns_a_hermes_tag_into_a_call_through_the_sdk(
    scripted_model: MakeScriptedModel, stream: bool
) -> None:
    tag = '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>'
    scripted = scripted_model([text("Sure. " + tag)])
    assert scripted.server is not None
    port = openai_sdk_model(
        sdk_client(scripted.server.url), stream=stream, tool_call_recovery="hermes"
    )
    events = events_of(port)

    assert joined(events) == "Sure. "
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.index, e.name) for e in started] == [(0, "add")]
    fragments = [e.fragment for e in events if isinstance(e, ToolCallArgumentsDelta)]
    assert json.loads("".join(fragments)) == {"a": 1}
    assert isinstance(events[-1], ModelResponded)


def test_an_unknown_recovery_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="tool_call_recovery"):
        openai_sdk_model(SimpleNamespace(), tool_call_recovery="qwen9")


def test_a_whole_completion_through_the_sdk(scripted_model: MakeScriptedModel) -> None:
    scripted = scripted_model([tool_calls(("call_1", "add", {"a": 1}), text="Adding.")])
    assert scripted.server is not None
    port = openai_sdk_model(sdk_client(scripted.server.url), stream=False)
    events = events_of(port)

    assert events == [
        TextDelta(text="Adding."),
        ToolCallStarted(index=0, call_id="call_1", name="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a": 1}'),
        ModelResponded(finish_reason="tool_calls", usage=Usage(input_tokens=10, output_tokens=5)),
    ]
    assert scripted.requests[0]["stream"] is False


def test_an_http_error_is_the_same_failure_as_the_httpx_drivers(
    scripted_model: MakeScriptedModel,
) -> None:
    errors = [http_error(429, "slow down", retry_after=7), http_error(400, "bad tools")]
    scripted = scripted_model([*errors, *errors])
    assert scripted.server is not None
    port = openai_sdk_model(sdk_client(scripted.server.url))
    driver = http_model("openai", base_url=scripted.server.url, key="sk-secret-x")

    [busy], [bad] = calls_of(port, 2)

    assert (busy.retryable, busy.status, busy.retry_after) == (True, 429, 7.0)
    assert "slow down" in busy.message
    assert (bad.retryable, bad.status) == (False, 400)
    assert [[busy], [bad]] == calls_of(driver, 2)


def test_a_cut_stream_is_a_retryable_failure_after_what_came(
    scripted_model: MakeScriptedModel,
) -> None:
    scripted = scripted_model([cut_off(text("a long answer that is cut", chunk_size=4), 3)])
    assert scripted.server is not None
    events = events_of(openai_sdk_model(sdk_client(scripted.server.url)))

    assert joined(events) == "a long a"
    assert isinstance(events[-1], ModelCallFailed)
    assert events[-1].retryable


def test_a_refused_connection_is_retryable_and_never_shows_the_key() -> None:
    client = openai.AsyncOpenAI(
        base_url="http://127.0.0.1:9/v1", api_key="sk-secret-x", max_retries=0
    )
    [failure] = events_of(openai_sdk_model(client))

    assert isinstance(failure, ModelCallFailed)
    assert failure.retryable
    assert "sk-secret-x" not in repr(failure)


# --- stub clients: any object with chat.completions.create ---------------------------


class StubClient:
    """An AsyncOpenAI-shaped stub: `create` returns what `answer(kwargs)` gives."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[dict[str, Any]] = []
        self.closed = False
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    async def _create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return self.answer(kwargs)

    async def close(self) -> None:
        self.closed = True


class Chunks:
    """An async stream of chunk objects that records whether it was closed."""

    def __init__(self, chunks: list[Any]) -> None:
        self.chunks = chunks
        self.closed = False

    def __aiter__(self) -> Any:
        async def each() -> Any:
            for chunk in self.chunks:
                yield chunk

        return each()

    async def close(self) -> None:
        self.closed = True


def chunk(finish: str | None = None, **delta: Any) -> SimpleNamespace:
    """A chunk object as the SDK gives it: attributes, not a dict."""
    return SimpleNamespace(
        choices=[SimpleNamespace(delta=SimpleNamespace(**delta), finish_reason=finish)]
    )


def test_attribute_chunks_of_a_stub_decode_and_the_stream_is_closed() -> None:
    call = SimpleNamespace(index=0, id="c1", function=SimpleNamespace(name="add", arguments="{}"))
    stream = Chunks([chunk(content="Hi"), chunk(tool_calls=[call]), chunk(finish="tool_calls")])
    client = StubClient(lambda _: stream)
    events = events_of(openai_sdk_model(client, model="my-deployment"))

    assert events == [
        TextDelta(text="Hi"),
        ToolCallStarted(index=0, call_id="c1", name="add"),
        ToolCallArgumentsDelta(index=0, fragment="{}"),
        ModelResponded(finish_reason="tool_calls"),
    ]
    assert stream.closed
    assert client.calls[0]["model"] == "my-deployment"
    assert client.calls[0]["messages"][-1] == {"role": "user", "content": "What is 1 plus 2?"}


def test_dict_chunks_and_a_whole_dict_completion_from_a_stub() -> None:
    streamed = StubClient(
        lambda _: Chunks([{"choices": [{"delta": {"content": "ok"}, "finish_reason": "stop"}]}])
    )
    whole = StubClient(
        lambda _: {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}
    )

    assert events_of(openai_sdk_model(streamed)) == [
        TextDelta(text="ok"),
        ModelResponded(finish_reason="stop"),
    ]
    assert events_of(openai_sdk_model(whole)) == [
        TextDelta(text="ok"),
        ModelResponded(finish_reason="stop"),
    ]


def test_a_stub_stream_that_stops_before_its_finish_reason_is_truncated() -> None:
    client = StubClient(lambda _: Chunks([chunk(content="Hel")]))
    events = events_of(openai_sdk_model(client))

    assert events[0] == TextDelta(text="Hel")
    assert isinstance(events[-1], ModelCallFailed)
    assert events[-1].retryable
    assert "ended before" in events[-1].message


def test_whatever_a_stub_raises_becomes_a_fatal_failure() -> None:
    def boom(_: Any) -> Any:
        raise RuntimeError("boom")

    [failure] = events_of(openai_sdk_model(StubClient(boom)))

    assert failure == ModelCallFailed(retryable=False, message="RuntimeError: boom")


def test_the_port_closes_the_client_only_when_told_it_owns_it() -> None:
    kept, owned = StubClient(lambda _: None), StubClient(lambda _: None)

    async def close_both() -> None:
        await openai_sdk_model(kept).aclose()
        await openai_sdk_model(owned, close_client=True).aclose()

    anyio.run(close_both)
    assert (kept.closed, owned.closed) == (False, True)


def test_importing_the_adapters_does_not_import_openai() -> None:
    program = "import sys, toolreel.adapters\nprint('openai' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_are_retryable(scripted_model: MakeScriptedModel, status: int) -> None:
    scripted = scripted_model([http_error(status, "upstream down")])
    assert scripted.server is not None
    [failure] = events_of(openai_sdk_model(sdk_client(scripted.server.url)))

    assert isinstance(failure, ModelCallFailed)
    assert (failure.retryable, failure.status) == (True, status)


def test_the_shells_client_runs_on_the_sdk_port(scripted_model: MakeScriptedModel) -> None:
    @tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    scripted = scripted_model([tool_calls(("call_1", "add", {"a": 25, "b": 17})), text("42")])
    assert scripted.server is not None

    async def main() -> Any:
        port = openai_sdk_model(sdk_client(scripted.server.url))
        try:
            return await run("25 + 17?", scripted.options(tools=[add]), model=port)
        finally:
            await closed(port)

    result = anyio.run(main)
    assert result.text == "42"
    assert result.rounds[0].results[0].content == "42.0"


def test_stream_usage_off_sends_no_stream_options() -> None:
    client = StubClient(lambda _: Chunks([chunk(finish="stop", content="ok")]))
    events_of(openai_sdk_model(client, stream_usage=False))
    events_of(openai_sdk_model(client))

    assert "stream_options" not in client.calls[0]
    assert client.calls[1]["stream_options"] == {"include_usage": True}


def test_an_sdk_timeout_is_retryable() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")

    def slow(_: Any) -> Any:
        raise openai.APITimeoutError(request=request)

    [failure] = events_of(openai_sdk_model(StubClient(slow)))

    assert isinstance(failure, ModelCallFailed)
    assert failure.retryable
    assert failure.message.startswith("timeout error")


@pytest.mark.parametrize("library", ["httpx2", "httpx"])
@pytest.mark.parametrize(
    ("error", "kind"), [("ReadTimeout", "timeout error"), ("ConnectError", "connection error")]
)
def test_a_bare_transport_error_of_either_library_is_retryable(
    library: str, error: str, kind: str
) -> None:
    http = importlib.import_module(library)  # a client passed to the SDK may raise its own

    def broken(_: Any) -> Any:
        raise getattr(http, error)("no answer")

    [failure] = events_of(openai_sdk_model(StubClient(broken)))

    assert isinstance(failure, ModelCallFailed)
    assert failure.retryable
    assert failure.message.startswith(kind)


def test_a_cache_key_goes_as_extra_body_and_only_to_openais_own_api() -> None:
    keyed = attrs.evolve(REQUEST, cache_key="session-1")
    hosted = openai.AsyncOpenAI(api_key="sk-secret-x")
    elsewhere = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-secret-x")
    body = openai_sdk_model(hosted).body(keyed)
    assert "prompt_cache_key" not in body  # SDKs before the field take it in extra_body
    assert body["extra_body"] == {"prompt_cache_key": "session-1"}
    assert "extra_body" not in openai_sdk_model(elsewhere).body(keyed)
    assert "extra_body" not in openai_sdk_model(hosted).body(REQUEST)
