"""useChat's approval responses: the decisions `addToolApprovalResponse` puts in a `POST /api/chat`.

The `ai` package's own flow (ai@7: `AbstractChat.addToolApprovalResponse`,
`lastAssistantMessageIsCompleteWithApprovalResponses`, `uiMessagesSchema`):

1. A `tool-approval-request` part puts the message's tool part (`type`
   "tool-NAME", or "dynamic-tool") in state `approval-requested`, with
   `approval: {id}` (toolreel's `approvalId` is the call's id).
2. `addToolApprovalResponse({id, approved, reason})` moves it to state
   `approval-responded`, `approval: {id, approved, reason?}`.
3. With `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses`
   (or a bare `sendMessage()`) the chat posts its messages again
   (`trigger: "submit-message"`, `messageId`: that message's id): the list ends
   with the assistant message, and the response continues it.

`approval_responses(messages)` reads step 3's request: the decisions of the
assistant message that closes `messages` (none when the list ends with a user
message: that is a new prompt). `refusal` and `waiting_response` are the
answers to a request the paused turn cannot take: decisions for calls it does
not hold (400, naming them), a new prompt while calls wait (409, naming them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
from starlette.responses import JSONResponse

from toolreel.core import Approved, Denied, UsageError, misuse
from toolreel.core.record import Value

from ._conversations import Conversation

#: The state of a tool part the human has answered (the `ai` package's UI message schema).
RESPONDED = "approval-responded"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ApprovalDecision(Value):
    """A human's decision on a call a paused turn holds: approve it, or deny it with `reason`."""

    call_id: str
    approve: bool
    reason: str = ""

    def event(self) -> Approved | Denied:
        """The decision as the core's event."""
        if self.approve:
            return Approved(call_id=self.call_id)
        return Denied(call_id=self.call_id, reason=self.reason)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ApprovalResponses(Value):
    """The decisions a request's closing assistant message carries, and that message's id."""

    message_id: str | None
    decisions: tuple[ApprovalDecision, ...]


def approval_responses(messages: Any) -> ApprovalResponses | None:
    """The approval responses of the assistant message that ends `messages`, if it has any."""
    if not isinstance(messages, list):
        raise UsageError("'messages' must be a list of UI messages")
    last = messages[-1] if messages else None
    if not isinstance(last, dict) or last.get("role") != "assistant":
        return None
    parts = last.get("parts")
    answered = [
        part
        for part in (parts if isinstance(parts, list) else [])
        if isinstance(part, dict) and _is_tool_part(part) and part.get("state") == RESPONDED
    ]
    if not answered:
        return None
    decisions = tuple(_decision(part) for part in answered)
    ids = [decision.call_id for decision in decisions]
    twice = sorted({call_id for call_id in ids if ids.count(call_id) > 1})
    if twice:
        raise UsageError(f"approval ids answered more than once: {', '.join(map(repr, twice))}")
    message_id = last.get("id")
    return ApprovalResponses(
        message_id=message_id if isinstance(message_id, str) and message_id else None,
        decisions=decisions,
    )


def _is_tool_part(part: dict[str, Any]) -> bool:
    """A tool part of a UI message: "tool-NAME" (static) or "dynamic-tool"."""
    kind = part.get("type")
    return isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")


def _decision(part: dict[str, Any]) -> ApprovalDecision:
    """The decision an `approval-responded` part holds (`approval: {id, approved, reason?}`)."""
    approval = part.get("approval")
    if not isinstance(approval, dict):
        approval = {}
    call_id, approved = approval.get("id"), approval.get("approved")
    reason = approval.get("reason")
    if not isinstance(call_id, str) or not call_id or not isinstance(approved, bool):
        where = part.get("toolCallId")
        raise UsageError(
            f"the tool part {where!r} is {RESPONDED!r} but its 'approval' is not "
            "{id: string, approved: boolean, reason?: string}"
        )
    if reason is not None and not isinstance(reason, str):
        raise UsageError(f"the approval {call_id!r} has a 'reason' that is not a string")
    return ApprovalDecision(call_id=call_id, approve=approved, reason=reason or "")


# --- what a paused turn refuses ----------------------------------------------------------


def refusal(
    client: Conversation, decisions: Iterable[ApprovalDecision], *, continued: bool
) -> JSONResponse | None:
    """A 400 naming the decisions for calls the turn does not hold, or None if it holds them all.

    `continued` (useChat's flow): a call of the paused round decided before is
    known too (its `approval-responded` part is sent again until the round runs).
    """
    held = [request.call.id for request in client.pending_approvals]
    known = set(held) | (client.paused_round if continued else set())
    unknown = [decision for decision in decisions if decision.call_id not in known]
    if not unknown:
        return None
    refused = (misuse(client.phase, decision.event(), held) for decision in unknown)
    message = f"session {client.session_id}: " + " | ".join(map(str, filter(None, refused)))
    ids = [decision.call_id for decision in unknown]
    return JSONResponse({"error": message, "unknown": ids, "approvals": held}, status_code=400)


def waiting_response(client: Conversation) -> JSONResponse:
    """409: a new prompt while the turn waits for approval; which calls wait, and how to answer."""
    held = client.pending_approvals
    calls = ", ".join(f"{request.call.name} ({request.call.id})" for request in held)
    message = (
        f"session {client.session_id} waits for approval of {calls}: answer each call first "
        "(useChat: addToolApprovalResponse, then send; or POST /api/approvals)"
    )
    ids = [request.call.id for request in held]
    return JSONResponse({"error": message, "approvals": ids}, status_code=409)
