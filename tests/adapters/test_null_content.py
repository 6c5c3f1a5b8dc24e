"""A server that refuses `"content": null` on an assistant turn of tool calls gets `""`.

The server is a scripted OpenAI-compatible one on 127.0.0.1 that answers as
llama-cpp-python's does when a message's content is null: HTTP 500. By default
(`OpenAICodec(null_content="auto")`) the refused call goes again at once with
`""`, and every later call sends `""`; "null" and "empty" choose for good.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from toolreel.adapters import HttpModel, OpenAICodec
from toolreel.core import (
    ChatMessage,
    ModelCallFailed,
    ModelRequest,
    ModelResponded,
    ToolCall,
    ToolResult,
    ToolRound,
)
from toolreel.core.policies import RetryPolicy
from toolreel.shell import AgentOptions, Client, tool
from toolreel.shell.scripted import Reply, ScriptedServer, http_error, text, tool_calls

NO_RETRY = RetryPolicy(max_retries=0)
#: What llama-cpp-python's server says, in substance, about a null content (a Jinja template).
REFUSAL = 'can only concatenate str (not "NoneType") to str'


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def nulls(request: dict[str, Any]) -> int:
    """How many assistant messages of `request` have a null content."""
    return sum(
        1 for m in request["messages"] if m["role"] == "assistant" and m.get("content") is None
    )


def refusing(answer: str = REFUSAL, status: int = 500) -> Any:
    """A server script: calls `add` on a new prompt, answers its result; refuses any null."""

    def reply(request: dict[str, Any]) -> Reply:
        if nulls(request):
            return http_error(status, answer)
        if request["messages"][-1]["role"] == "tool":
            return text("The sum is " + request["messages"][-1]["content"])
        return tool_calls(("c1", "add", {"a": 2, "b": 3}))

    return reply


async def two_turns(options: AgentOptions) -> list[str]:
    """Ask twice in one session; each turn's finish reason and text."""
    ended = []
    async with Client(options) as client:
        for prompt in ("Add 2 and 3", "And again"):
            await client.query(prompt)
            finish = await client.wait()
            assert finish is not None
            ended.append(f"{finish.reason.value}: {finish.text}")
    return ended


def options(server: ScriptedServer) -> AgentOptions:
    return AgentOptions(
        model="local",
        base_url=server.url,
        tools=[add],
        auto_execute_tools=True,
        retry=NO_RETRY,
    )


def test_a_refused_null_is_sent_again_at_once_as_empty_and_then_always() -> None:
    with ScriptedServer(refusing()) as server:
        ended = anyio.run(two_turns, options(server))
    assert ended == ["completed: The sum is 5", "completed: The sum is 5"]
    sent = [nulls(request) for request in server.requests]
    assert sent == [0, 1, 0, 0, 0]  # turn 1: call, refused, again with ""; turn 2: no null at all
    assistant = [m for m in server.requests[2]["messages"] if m["role"] == "assistant"]
    assert assistant[0]["content"] == "" and assistant[0]["tool_calls"]


@pytest.mark.parametrize("status", [400, 422])
def test_a_client_error_naming_the_content_is_a_refusal_too(status: int) -> None:
    answer = "Invalid 'messages[2].content': expected a string, got null."
    with ScriptedServer(refusing(answer, status)) as server:
        ended = anyio.run(two_turns, options(server))
    assert ended[0] == "completed: The sum is 5"


def test_another_server_error_is_left_to_the_retry_policy() -> None:
    with ScriptedServer(refusing("the model is overloaded")) as server:
        ended = anyio.run(two_turns, options(server))
    assert ended[0].startswith("failed: ")
    assert [nulls(request) for request in server.requests[:2]] == [0, 1]
    assert len(server.requests) == 3  # no second try with "": turn 2 begins


def request_after_a_round() -> ModelRequest:
    """The neutral request of a second model call: a round of one call without text."""
    call = ToolCall(id="c1", name="add", arguments='{"a": 2, "b": 3}')
    done = ToolRound(
        assistant_text="",
        tool_calls=(call,),
        results=(ToolResult(call_id="c1", name="add", content="5"),),
    )
    messages = (
        ChatMessage(role="user", content="Add 2 and 3"),
        ChatMessage(role="assistant", content="", tool_rounds=(done,)),
    )
    return ModelRequest(model="local", system=None, messages=messages, tools=())


async def events_of(model: HttpModel) -> list[Any]:
    try:
        return [event async for event in model.stream(request_after_a_round())]
    finally:
        await model.aclose()


def test_null_content_null_keeps_sending_null_and_the_refusal_is_the_calls() -> None:
    with ScriptedServer(refusing()) as server:
        model = HttpModel(OpenAICodec(null_content="null"), base_url=server.url)
        [failure] = anyio.run(events_of, model)
    assert isinstance(failure, ModelCallFailed) and failure.status == 500
    assert [nulls(request) for request in server.requests] == [1]


def test_null_content_empty_never_sends_null() -> None:
    with ScriptedServer(refusing()) as server:
        model = HttpModel(OpenAICodec(null_content="empty"), base_url=server.url)
        events = anyio.run(events_of, model)
    assert isinstance(events[-1], ModelResponded)
    assert [nulls(request) for request in server.requests] == [0]


def test_the_codec_encodes_each_choice() -> None:
    request = request_after_a_round()
    for choice, content in [("auto", None), ("null", None), ("empty", "")]:
        body = OpenAICodec(null_content=choice).encode(request, stream=True)
        assert body["messages"][1]["content"] == content
    with pytest.raises(ValueError, match="null_content"):
        OpenAICodec(null_content="nil")  # type: ignore[arg-type]
