"""The history as providers see it: requests built from it, and the checks it must pass."""

from __future__ import annotations

from collections.abc import Iterable

from ._config import LoopConfig
from ._model import request, rounds_message, so_far
from ._records import ChatMessage, ModelRequest, Reasoning, ToolRound
from ._state import Turn


def turn_message(turn: Turn, text: str = "", reasoning: tuple[Reasoning, ...] = ()) -> ChatMessage:
    """The turn's assistant message: its final text after its rounds."""
    return rounds_message(turn.rounds, text, reasoning)


def build_request(config: LoopConfig, history: tuple[ChatMessage, ...], turn: Turn) -> ModelRequest:
    """The request for the turn's next model call.

    The history already ends with the turn's user message; rounds so far follow
    as one assistant message with empty content. The final-answer call forbids
    tools (`tool_choice="none"`, tools still listed since some providers reject
    tool blocks in the history without them) and ends with the instruction to answer.
    """
    messages = so_far(history, turn.rounds)
    model = config.model_at(turn.model) if turn.model else None  # (a fallback's: rule 8)
    if not turn.final_call:
        return request(config.settings, messages, model=model)
    final = ChatMessage(role="user", content=config.final_answer_prompt)
    return request(config.settings, (*messages, final), tool_choice="none", model=model)


def unanswered_calls(messages: Iterable[ChatMessage]) -> tuple[str, ...]:
    """Ids of calls lacking exactly one result in the same round, in order (empty when valid)."""
    missing: list[str] = []
    for message in messages:
        for tool_round in message.tool_rounds:
            missing.extend(_round_mismatches(tool_round))
    return tuple(missing)


def _round_mismatches(tool_round: ToolRound) -> list[str]:
    """Calls of one round without exactly one result, paired in call order."""
    call_ids = [call.id for call in tool_round.tool_calls]
    result_ids = [result.call_id for result in tool_round.results]
    if call_ids == result_ids:
        return []
    return [call_id for call_id in call_ids if result_ids.count(call_id) != 1] or call_ids
