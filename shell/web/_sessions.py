"""A journal's sessions as JSON, for `GET /api/sessions` and `GET /api/sessions/{id}`.

Sessions are rebuilt with `load_session` (the journal holds facts; what they
mean is folded again). Structured-output agent sessions are not chat
sessions: the list leaves them out and their detail is 404.
"""

from __future__ import annotations

from typing import Any

from toolreel.adapters import (
    Journal,
    JournalCorrupt,
    TurnSummary,
    load_session,
    render_transcript,
)
from toolreel.core import ToolRound
from toolreel.core.notices import ApprovalRequested
from toolreel.core.outcomes import FinishReason

from ._event_stream import call_json, usage_json

#: How long a session's title (its first prompt) may be.
TITLE_LENGTH = 80

#: The `outcome` of a turn that ended for each reason.
OUTCOMES = {
    FinishReason.COMPLETED: "completed",
    FinishReason.MAX_ITERATIONS: "capped",
    FinishReason.FAILED: "failed",
    FinishReason.CANCELLED: "cancelled",
    FinishReason.BLOCKED: "blocked",
    FinishReason.OVER_BUDGET: "over_budget",
}


def chat_sessions(journal: Journal) -> list[str]:
    """The ids of the journal's chat sessions, newest first."""
    return [sid for sid in reversed(journal.sessions()) if _is_chat(journal, sid)]


def _is_chat(journal: Journal, session_id: str) -> bool:
    """Whether the session is a chat (not a structured-output agent run)."""
    return not journal.config(session_id).structured


def title(prompt: str) -> str:
    """A prompt shortened to a title of at most TITLE_LENGTH characters."""
    flat = " ".join(prompt.split())
    return flat if len(flat) <= TITLE_LENGTH else flat[: TITLE_LENGTH - 1] + "…"


def session_summary(journal: Journal, session_id: str) -> dict[str, Any]:
    """One row of the session list: id, title, turns, rounds, how the last turn ended.

    `outcome` is None for a session without turns; "awaiting_approval" (with
    `approvals`, how many calls are held) when its last turn is paused. A
    session the journal cannot fold has `error` instead.
    """
    try:
        session = load_session(journal, session_id)
    except JournalCorrupt as exc:
        return {"id": session_id, "title": "", "turns": 0, "rounds": 0, "error": str(exc)}
    last = session.turns[-1] if session.turns else None
    return {
        "id": session_id,
        "title": title(session.turns[0].prompt) if session.turns else "",
        "turns": len(session.turns),
        "rounds": sum(len(_rounds(turn)) for turn in session.turns),
        "outcome": _outcome(last, session.approvals) if last is not None else None,
        "approvals": len(session.approvals),
    }


def _outcome(turn: TurnSummary, held: tuple[ApprovalRequested, ...] = ()) -> str:
    """How a turn ended, as the page names it ("awaiting_approval" if it holds calls)."""
    if turn.reason is None:
        return "awaiting_approval" if held else "unfinished"
    return OUTCOMES[turn.reason]


def session_detail(journal: Journal, session_id: str) -> dict[str, Any] | None:
    """A session's turns, rounds and transcript; None when it is no chat session here."""
    if session_id not in journal.sessions() or not _is_chat(journal, session_id):
        return None
    session = load_session(journal, session_id)
    last = len(session.turns) - 1
    return {
        "id": session_id,
        "turns": [
            _turn(turn, session.approvals if index == last else ())
            for index, turn in enumerate(session.turns)
        ],
        "transcript": render_transcript(session),
        "warnings": list(session.warnings),
    }


def _rounds(turn: TurnSummary) -> tuple[ToolRound, ...]:
    """The tool rounds the turn's answer recorded."""
    return turn.answer.tool_rounds if turn.answer is not None else ()


def _turn(turn: TurnSummary, held: tuple[ApprovalRequested, ...] = ()) -> dict[str, Any]:
    """One turn as JSON (a paused one lists the calls it holds under `approvals`)."""
    answered = turn.reason is FinishReason.COMPLETED
    data: dict[str, Any] = {
        "prompt": turn.prompt,
        "answer": turn.text if answered else None,
        "outcome": _outcome(turn, held),
        "usage": usage_json(turn.usage),
        "rounds": [_round(number, item) for number, item in enumerate(_rounds(turn), 1)],
    }
    if turn.error is not None:
        data["error"] = turn.error.message
    if turn.block_reason is not None:
        data["error"] = turn.block_reason
    if held:
        data["approvals"] = [
            {**call_json(request.call), "reason": request.reason} for request in held
        ]
    return data


def _round(number: int, tool_round: ToolRound) -> dict[str, Any]:
    """One round: its number, the text before its calls, and each call with its result."""
    results = {result.call_id: result for result in tool_round.results}
    calls = []
    for call in tool_round.tool_calls:
        result = results.get(call.id)
        calls.append(
            {
                **call_json(call),
                "content": result.content if result is not None else None,
                "is_error": result.is_error if result is not None else False,
            }
        )
    return {"number": number, "text": tool_round.assistant_text, "calls": calls}
