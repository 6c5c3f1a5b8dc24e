"""toolreel.open_agent.utils: open_agent's client factory, request helpers and stream parser."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from toolreel.core import ConfigError
from toolreel.open_agent import client as client_module
from toolreel.open_agent.types import AgentOptions, TextBlock, ToolUseBlock, ToolUseError
from toolreel.open_agent.utils import (
    ToolCallAggregator,
    create_client,
    format_messages,
    format_tools,
)

OPTIONS = AgentOptions(
    system_prompt="s",
    model="m",
    base_url="http://127.0.0.1:9/v1",
    timeout=12.5,
    api_key="local-key",
)


def text_chunk(content: Any) -> SimpleNamespace:
    """A chunk carrying text, attribute-shaped like the openai SDK's."""
    delta = SimpleNamespace(content=content, tool_calls=None)
    return SimpleNamespace(choices=[SimpleNamespace(delta=delta)])


def call_chunk(*calls: dict[str, Any]) -> SimpleNamespace:
    """A chunk carrying tool-call fragments: index, id, name, arguments."""
    fragments = [
        SimpleNamespace(
            index=call.get("index", 0),
            id=call.get("id"),
            function=SimpleNamespace(name=call.get("name"), arguments=call.get("arguments")),
        )
        for call in calls
    ]
    delta = SimpleNamespace(content=None, tool_calls=fragments)
    return SimpleNamespace(choices=[SimpleNamespace(delta=delta)])


def test_create_client_is_an_async_openai_for_the_options() -> None:
    openai = pytest.importorskip("openai")
    client = create_client(OPTIONS)
    assert isinstance(client, openai.AsyncOpenAI)
    assert str(client.base_url).rstrip("/") == "http://127.0.0.1:9/v1"
    assert (client.api_key, client.timeout) == ("local-key", 12.5)
    anyio.run(client.close)  # no connection was opened; nothing left for a later test's loop


def test_create_client_is_the_clients_own_seam() -> None:
    assert create_client is client_module.create_client


def test_create_client_without_openai_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ConfigError, match=r"toolreel\[openai\]"):
        create_client(OPTIONS)


def test_messages_are_system_then_history_then_the_prompt() -> None:
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    assert format_messages("rules", "Again", history) == [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Again"},
    ]
    assert format_messages("rules", "Hi") == format_messages("rules", "Hi", [])
    assert len(format_messages("rules", "Hi")) == 2


def test_formatted_messages_are_copies_the_caller_may_change() -> None:
    history = [{"role": "user", "content": "Hi"}]
    messages = format_messages("rules", "Again", history)
    messages[1]["content"] = "changed"
    assert history == [{"role": "user", "content": "Hi"}]


def test_tools_are_formatted_by_their_own_definition() -> None:
    class Described:
        def __init__(self, name: str) -> None:
            self.name = name

        def to_openai_format(self) -> dict[str, Any]:
            return {"type": "function", "function": {"name": self.name}}

    assert format_tools([Described("a"), Described("b")]) == [
        {"type": "function", "function": {"name": "a"}},
        {"type": "function", "function": {"name": "b"}},
    ]
    assert format_tools([]) == []


def test_text_is_returned_as_it_arrives() -> None:
    aggregator = ToolCallAggregator()
    assert aggregator.process_chunk(text_chunk("Hello")) == TextBlock(text="Hello")
    assert aggregator.process_chunk(text_chunk(" world")) == TextBlock(text=" world")


def test_servers_that_resend_the_whole_text_give_only_the_new_part() -> None:
    aggregator = ToolCallAggregator()
    texts = [aggregator.process_chunk(text_chunk(t)) for t in ("Hel", "Hello", "Hello world")]
    assert texts == [TextBlock(text="Hel"), TextBlock(text="lo"), TextBlock(text=" world")]


@pytest.mark.parametrize(
    "chunk",
    [
        SimpleNamespace(choices=[]),
        SimpleNamespace(),
        SimpleNamespace(choices=[SimpleNamespace(delta=None)]),
        text_chunk(None),
        text_chunk(""),
    ],
)
def test_chunks_without_text_give_nothing(chunk: Any) -> None:
    assert ToolCallAggregator().process_chunk(chunk) is None


def test_content_given_as_parts_is_joined() -> None:
    parts = [{"type": "text", "text": "a"}, SimpleNamespace(type="text", text="b")]
    assert ToolCallAggregator().process_chunk(text_chunk(parts)) == TextBlock(text="ab")


def test_dict_shaped_chunks_are_read_like_sdk_objects() -> None:
    aggregator = ToolCallAggregator()
    chunk = {
        "choices": [
            {
                "delta": {
                    "content": "x",
                    "tool_calls": [
                        {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
                    ],
                }
            }
        ]
    }
    assert aggregator.process_chunk(chunk) == TextBlock(text="x")
    assert aggregator.finalize_tools() == [ToolUseBlock(id="c1", name="f", input={})]


def test_tool_call_fragments_are_assembled_per_index_in_stream_order() -> None:
    aggregator = ToolCallAggregator()
    aggregator.process_chunk(
        call_chunk(
            {"index": 1, "id": "c2", "name": "second", "arguments": '{"b"'},
            {"index": 0, "id": "c1", "name": "first", "arguments": '{"q": "new'},
        )
    )
    aggregator.process_chunk(call_chunk({"index": 0, "arguments": 's"}'}))
    aggregator.process_chunk(call_chunk({"index": 1, "arguments": ": 2}"}))
    assert aggregator.finalize_tools() == [
        ToolUseBlock(id="c1", name="first", input={"q": "news"}),
        ToolUseBlock(id="c2", name="second", input={"b": 2}),
    ]


def test_a_call_without_id_or_name_is_an_error() -> None:
    aggregator = ToolCallAggregator()
    aggregator.pending_tools[0] = {"id": None, "name": "f", "arguments_buffer": "{}"}
    aggregator.pending_tools[1] = {"id": "c2", "name": None, "arguments_buffer": "{}"}
    errors = aggregator.finalize_tools()
    assert all(isinstance(e, ToolUseError) for e in errors)
    assert all("missing required fields" in e.error for e in errors if isinstance(e, ToolUseError))


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [("{not json", "Invalid JSON"), ("[1, 2]", "an object is needed, not a list")],
)
def test_arguments_that_are_not_a_json_object_are_an_error(arguments: str, problem: str) -> None:
    aggregator = ToolCallAggregator()
    aggregator.pending_tools[0] = {"id": "c1", "name": "f", "arguments_buffer": arguments}
    [error] = aggregator.finalize_tools()
    assert isinstance(error, ToolUseError)
    assert problem in error.error
    assert error.raw_data == arguments


@pytest.mark.parametrize("arguments", ["", "  "])
def test_no_arguments_are_an_empty_input(arguments: str) -> None:
    aggregator = ToolCallAggregator()
    aggregator.process_chunk(call_chunk({"id": "c1", "name": "ping", "arguments": arguments}))
    assert aggregator.finalize_tools() == [ToolUseBlock(id="c1", name="ping", input={})]


def test_finalizing_starts_afresh_for_the_next_response() -> None:
    aggregator = ToolCallAggregator()
    aggregator.process_chunk(text_chunk("Hello"))
    aggregator.process_chunk(call_chunk({"id": "c1", "name": "f", "arguments": "{}"}))
    assert len(aggregator.finalize_tools()) == 1
    assert aggregator.pending_tools == {}
    assert aggregator.finalize_tools() == []
    assert aggregator.process_chunk(text_chunk("Hello")) == TextBlock(text="Hello")
