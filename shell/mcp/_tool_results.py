"""The results an agent's MCP tool answers with: its text, or an error saying why.

Each names the call's session in its `_meta` (`SESSION_META`), when one began.
"""

from __future__ import annotations

from collections.abc import Iterable

import mcp_types as types

from toolreel.core import Finish
from toolreel.core.notices import ApprovalRequested
from toolreel.core.outcomes import FinishReason

#: The `_meta` key of a result that names the call's session in the journal.
SESSION_META = "toolreel/session_id"


def held(
    requests: Iterable[ApprovalRequested], session: str, how: str | None
) -> types.CallToolResult:
    """The error result of a turn left paused: which calls, and `how` to decide them."""
    calls = ", ".join(f"{r.call.name} ({r.call.id})" for r in requests)
    decide = (
        f"decide it with {how}"
        if how is not None
        else "this server keeps no journal file, so nobody can decide it (give it a journal)"
    )
    return error_result(
        f"held for approval: {calls}; this MCP client takes no elicitation, so the call "
        f"waits in session {session}: {decide}",
        session,
    )


def finished(finish: Finish | None, session: str) -> types.CallToolResult:
    """A turn's answer, or (not completed) an error result with the reason."""
    if finish is None:
        return error_result("the turn ended without an answer", session)
    if finish.reason is FinishReason.COMPLETED:
        return text_result(finish.text, session)
    error = finish.error
    why = error.message if error is not None else finish.reason.value
    tail = f"; its last text: {finish.text}" if finish.text else ""
    return error_result(f"the turn did not complete ({finish.reason.value}): {why}{tail}", session)


def text_result(text: str, session: str | None = None) -> types.CallToolResult:
    """A result of one text block (naming its session, if any)."""
    meta = {SESSION_META: session} if session else None
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], _meta=meta)


def error_result(text: str, session: str | None = None) -> types.CallToolResult:
    """A tool error result (`isError`): the caller reads why."""
    return text_result(text, session).model_copy(update={"is_error": True})
