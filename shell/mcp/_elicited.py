"""Approvals asked of the MCP client: each held call as a form elicitation, its answer a decision.

A client that declared the elicitation capability gets one `elicitation/create` per held
call, related to the tool call's request (over HTTP it rides that request's stream): a
form with `approve` (boolean) and `reason` (what the model reads if denied). Accepted
with `approve: true` approves; anything else (declined, cancelled, `approve: false`)
denies, with the reason given, else the core's own words ("The user denied this tool
call."). A client that cannot be asked after all (no back channel, an error answer)
leaves the calls held, as a client without the capability does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from toolreel.core.notices import ApprovalRequested
from toolreel.core.record import Value

#: What an elicited approval asks for.
APPROVAL_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Approve", "description": "Run the call?"},
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "If denied: what the model reads.",
        },
    },
    "required": ["approve"],
}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Decisions(Value):
    """The client's answers: the call ids approved, and those denied with their reasons."""

    approve: tuple[str, ...] = ()
    deny: dict[str, str] = attrs.field(factory=dict)


def can_elicit(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client said it takes form elicitations."""
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


async def ask(
    ctx: ServerRequestContext[Any, Any], requests: Iterable[ApprovalRequested]
) -> Decisions | None:
    """Ask the client about each held call, in call order: its decisions, or None when it
    cannot be asked after all (no back channel, an error answer): the calls stay held."""
    try:
        return await _asked(ctx, requests)
    except MCPError:  # NoBackChannelError included (a stateless modern-era request)
        return None


async def _asked(
    ctx: ServerRequestContext[Any, Any], requests: Iterable[ApprovalRequested]
) -> Decisions:
    """Each held call asked, in call order."""
    approve: list[str] = []
    deny: dict[str, str] = {}
    for request in requests:
        call = request.call
        why = f" ({request.reason})" if request.reason else ""
        answer = await ctx.session.elicit_form(
            f"Approve the call {call.name}({call.arguments}){why}?",
            APPROVAL_FORM,
            related_request_id=ctx.request_id,
        )
        content = answer.content or {}
        if answer.action == "accept" and content.get("approve") is True:
            approve.append(call.id)
        else:
            reason = content.get("reason") if answer.action == "accept" else None
            deny[call.id] = reason if isinstance(reason, str) else ""
    return Decisions(approve=tuple(approve), deny=deny)
