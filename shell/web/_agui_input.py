"""What an AG-UI `RunAgentInput` asks of the served loop: a prompt, or decisions on held calls.

Read with `ag-ui-protocol`'s own model (so only the AG-UI route loads it):

- `threadId` is the session (a thread the journal does not have is a new
  session of that id); `runId` names the run the response streams.
- Without `resume`, the prompt is the text of the last user message (a string
  `content`, or its text parts); the earlier messages are ignored: the journal
  holds the history.
- With `resume`, each entry answers an interrupt of the run before (rule 5 of
  shell/web/_agui_stream.py): `interruptId` is the held call's id; status
  "resolved" with payload `{approved: bool, reason?: string}` approves or
  denies it, "cancelled" denies it. The messages are then not read.

Not supported, and ignored: `tools` (frontend tools), `context`, `state`,
`forwardedProps`.
"""

from __future__ import annotations

from typing import Any

import attrs
from ag_ui.core import ResumeEntry, RunAgentInput, TextPart, UserMessage
from pydantic import ValidationError

from toolreel.core import UsageError
from toolreel.core.record import Value

from ._approvals import ApprovalDecision


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AguiRequest(Value):
    """One run asked for: in session `thread_id`, a prompt or decisions."""

    thread_id: str
    run_id: str
    prompt: str = ""
    decisions: tuple[ApprovalDecision, ...] = ()


def agui_request(data: dict[str, Any]) -> AguiRequest:
    """The run a `RunAgentInput` body asks for (a `UsageError` saying what is wrong, else)."""
    try:
        given = RunAgentInput.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc'])) or 'body'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise UsageError(f"the body is not an AG-UI RunAgentInput: {problems}") from exc
    thread_id, run_id = given.thread_id, given.run_id
    if given.resume:
        decisions = tuple(_decision(entry) for entry in given.resume)
        return AguiRequest(thread_id=thread_id, run_id=run_id, decisions=decisions)
    return AguiRequest(thread_id=thread_id, run_id=run_id, prompt=_last_user_text(given))


def _last_user_text(given: RunAgentInput) -> str:
    """The text of the input's last user message."""
    users = [message for message in given.messages if isinstance(message, UserMessage)]
    if not users:
        raise UsageError("'messages' holds no user message (and there is no 'resume')")
    content = users[-1].content
    if isinstance(content, str):
        text = content
    else:
        text = "".join(part.text for part in content if isinstance(part, TextPart))
    if not text.strip():
        raise UsageError("the last user message has no text")
    return text


def _decision(entry: ResumeEntry) -> ApprovalDecision:
    """A resume entry as the decision on the held call it names."""
    if entry.status == "cancelled":
        return ApprovalDecision(call_id=entry.interrupt_id, approve=False)
    payload = entry.payload
    approved = payload.get("approved") if isinstance(payload, dict) else None
    reason = payload.get("reason", "") if isinstance(payload, dict) else ""
    if not isinstance(approved, bool) or not isinstance(reason, str):
        raise UsageError(
            f"the resume entry for {entry.interrupt_id!r} must carry the payload "
            "{approved: boolean, reason?: string}"
        )
    return ApprovalDecision(call_id=entry.interrupt_id, approve=approved, reason=reason)
