"""History checks and requests (core/_history.py)."""

from __future__ import annotations

from loop import config

from toolreel.core import ChatMessage, ToolCall, ToolResult, ToolRound
from toolreel.core._history import build_request, unanswered_calls
from toolreel.core._state import Turn

A = ToolCall(id="a", name="add")
B = ToolCall(id="b", name="add")


def answer(call: ToolCall) -> ToolResult:
    return ToolResult(call_id=call.id, name=call.name, content="1")


def message(*rounds: ToolRound) -> ChatMessage:
    return ChatMessage(role="assistant", content="", tool_rounds=rounds)


def test_a_history_where_every_call_has_its_result_is_valid() -> None:
    ok = ToolRound(assistant_text="", tool_calls=(A, B), results=(answer(A), answer(B)))
    assert unanswered_calls([message(ok)]) == ()


def test_missing_duplicate_or_misordered_results_are_reported() -> None:
    missing = ToolRound(assistant_text="", tool_calls=(A, B), results=(answer(A),))
    doubled = ToolRound(assistant_text="", tool_calls=(A,), results=(answer(A), answer(A)))
    swapped = ToolRound(assistant_text="", tool_calls=(A, B), results=(answer(B), answer(A)))
    assert unanswered_calls([message(missing)]) == ("b",)
    assert unanswered_calls([message(doubled)]) == ("a",)
    assert unanswered_calls([message(swapped)]) == ("a", "b")


def test_the_request_carries_the_rounds_so_far_as_one_assistant_message() -> None:
    cfg = config(system_prompt="sys", max_tokens=100, temperature=0.2)
    user = ChatMessage(role="user", content="hi")
    tool_round = ToolRound(assistant_text="t", tool_calls=(A,), results=(answer(A),))
    turn = Turn(number=1, prompt="hi", rounds=(tool_round,))
    request = build_request(cfg, (user,), turn)
    assert request.messages == (user, message(tool_round))
    assert (request.system, request.max_tokens, request.temperature) == ("sys", 100, 0.2)
