"""Compact history to provider turns (adapters/_providers/_expand.py), as seed 001 expands it."""

from __future__ import annotations

from toolreel.adapters._providers._expand import ModelTurn, ResultsTurn, UserTurn, expand
from toolreel.core import ChatMessage, Reasoning, ToolCall, ToolResult, ToolRound

CALL = ToolCall(id="c1", name="weather_lookup", arguments='{"city": "Tokyo"}')
RESULT = ToolResult(call_id="c1", name="weather_lookup", content='{"temp": 22}')
THINK = Reasoning(text="check weather", signature="sig")


def test_rounds_expand_to_text_and_calls_then_results_then_final_text() -> None:
    tool_round = ToolRound(
        assistant_text="Let me check...", tool_calls=(CALL,), results=(RESULT,), reasoning=(THINK,)
    )
    messages = [
        ChatMessage(role="user", content="Weather in Tokyo?"),
        ChatMessage(role="assistant", content="22°C and sunny!", tool_rounds=(tool_round,)),
    ]
    assert list(expand(messages)) == [
        UserTurn(text="Weather in Tokyo?"),
        ModelTurn(text="Let me check...", calls=(CALL,), reasoning=(THINK,)),
        ResultsTurn(results=(RESULT,), calls=(CALL,)),
        ModelTurn(text="22°C and sunny!"),
    ]


def test_an_assistant_message_with_only_rounds_has_no_final_turn() -> None:
    tool_round = ToolRound(assistant_text="", tool_calls=(CALL,), results=(RESULT,))
    turns = list(expand([ChatMessage(role="assistant", content="", tool_rounds=(tool_round,))]))
    assert [type(t) for t in turns] == [ModelTurn, ResultsTurn]
