"""The scripted calculator model and the demo that drives the reducer with it."""

from __future__ import annotations

import pytest

from toolreel.core import (
    ChatMessage,
    ModelRequest,
    ModelResponded,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolResult,
    ToolRound,
)
from toolreel.shell import demo
from toolreel.shell._calculator_model import Step, openai_reply, plan, respond


def request(*messages: ChatMessage, tool_choice: str = "auto") -> ModelRequest:
    return ModelRequest(
        model="m", system=None, messages=messages, tools=(), tool_choice=tool_choice
    )


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("What is 25 plus 17?", [[Step("add", 25, 17)]]),
        ("Calculate 144 divided by 12", [[Step("divide", 144, 12)]]),
        ("What's 7 times 8, then add 5?", [[Step("multiply", 7, 8)], [Step("add", None, 5)]]),
        ("What is 2 plus 3 and 4 times 5?", [[Step("add", 2, 3), Step("multiply", 4, 5)]]),
        ("Tell me a joke", []),
    ],
)
def test_plan_reads_chained_and_parallel_steps(prompt: str, expected: list) -> None:
    assert plan(prompt) == expected


def test_independent_steps_are_parallel_calls_in_one_streamed_response() -> None:
    events = respond(request(ChatMessage(role="user", content="2 plus 3 and 4 times 5")))
    starts = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(s.index, s.name) for s in starts] == [(0, "add"), (1, "multiply")]
    args = "".join(
        e.fragment for e in events if isinstance(e, ToolCallArgumentsDelta) and e.index == 1
    )
    assert args == '{"a": 4, "b": 5}'
    assert isinstance(events[-1], ModelResponded)
    assert events[-1].finish_reason == "tool_calls"


def test_a_chained_step_uses_the_previous_result_then_the_answer_follows() -> None:
    user = ChatMessage(role="user", content="What's 7 times 8, then add 5?")
    first = ToolRound(
        assistant_text="",
        tool_calls=(ToolCall(id="c", name="multiply", arguments='{"a": 7, "b": 8}'),),
        results=(ToolResult(call_id="c", name="multiply", content="56"),),
    )
    events = respond(request(user, ChatMessage(role="assistant", content="", tool_rounds=(first,))))
    args = "".join(e.fragment for e in events if isinstance(e, ToolCallArgumentsDelta))
    assert args == '{"a": 56, "b": 5}'
    second = ToolRound(
        assistant_text="",
        tool_calls=(ToolCall(id="d", name="add", arguments=args),),
        results=(ToolResult(call_id="d", name="add", content="61"),),
    )
    final = respond(
        request(user, ChatMessage(role="assistant", content="", tool_rounds=(first, second)))
    )
    assert "".join(e.text for e in final if isinstance(e, TextDelta)) == "The answer is 61."


def test_the_demo_answers_the_three_calculator_prompts(capsys, monkeypatch, tmp_path) -> None:
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    assert demo.main(["--journal", str(tmp_path / "demo.db")]) == 0
    out = capsys.readouterr().out
    assert "scripted calculator model" in out
    for answer in ("The answer is 42.", "The answer is 12.", "The answer is 61."):
        assert answer in out
    assert "tool call: add({'a': 56, 'b': 5})" in out  # the chained round used the product
    assert "History: 6 messages" in out
    assert "Replay: all " in out and "gave the recorded effects again" in out
    assert "## Turn 3" in out and "→ multiply" in out  # the transcript
    assert (tmp_path / "demo.db").exists()


def test_the_openai_reply_chains_rounds_and_runs_independent_steps_in_parallel() -> None:
    first = openai_reply({"messages": [{"role": "user", "content": "2 plus 3 and 4 times 5"}]})
    assert [name for _, name, _ in first.calls] == ["add", "multiply"]
    chained = openai_reply(
        {
            "messages": [
                {"role": "user", "content": "7 times 8, then add 5"},
                {"role": "assistant", "tool_calls": [{"id": "c"}]},
                {"role": "tool", "tool_call_id": "c", "content": '{"result": 56.0}'},
            ]
        }
    )
    assert chained.calls == (("call_2_1", "add", '{"a": 56, "b": 5}'),)
