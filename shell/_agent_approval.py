"""Human approval for agent runs: what a paused run waits for, and going on with decisions.

An agent run whose helper call needs approval (`@tool(requires_approval=True)`
or a PreToolUse hook answering "ask") pauses once nothing else runs:
`execute_agent` journals the pause and raises `ApprovalPending` naming the
session. Later, in any process, `agent_approvals` lists the held calls and
`resume_agent` feeds the human's decisions (journaled) and carries on. The
rules are the core's (rules 15 and 17 of core/_step.py); this only carries them out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import anyio

from toolreel.adapters import Journal, ModelPort, SessionNotFound
from toolreel.core import Approved, Denied, awaiting_approval
from toolreel.core.notices import ApprovalRequested

from ._agent import AgentDefinition, AgentFailure, AgentSuccess, Given, _journaled, run_config
from ._client import open_journal
from ._options import AgentOptions, AgentRunOptions
from ._restore import rebuild
from ._tools import registry

T = TypeVar("T")


def agent_approvals(
    session_id: str, journal: str | Path | Journal
) -> tuple[ApprovalRequested, ...]:
    """The helper calls of agent run `session_id` held for a human's decision, in call order."""
    kept = open_journal(journal)
    try:
        if session_id not in kept.sessions():
            raise SessionNotFound(session_id, repr(journal))
        if not kept.config(session_id).structured:
            return ()
        return awaiting_approval(rebuild(kept, session_id).state)
    finally:
        if isinstance(journal, str | Path):
            kept.close()


async def resume_agent(
    session_id: str,
    definition: AgentDefinition[Any, T],
    options: AgentRunOptions | AgentOptions,
    *,
    approve: Iterable[str] = (),
    deny: Mapping[str, str] | Iterable[str] = (),
    journal: str | Path | Journal | None = None,
    model: ModelPort | None = None,
    abort: anyio.Event | None = None,
) -> AgentSuccess[T] | AgentFailure:
    """Go on with agent run `session_id` (paused for approval, or cut by a crash).

    Each call id in `approve` runs; each in `deny` gets the reason the mapping
    gives (ids alone: "The user denied this tool call.") as its error result.
    The decisions are journaled before anything runs. A call id that waits for
    no approval is `UnknownApproval` (nothing is journaled); calls left
    undecided keep the run paused: `ApprovalPending` again. `journal` defaults
    to `options.journal`.
    """
    options = AgentRunOptions.of(options)
    denials = deny.items() if isinstance(deny, Mapping) else ((call_id, "") for call_id in deny)
    decisions: tuple[Approved | Denied, ...] = (
        *(Approved(call_id=call_id) for call_id in approve),
        *(Denied(call_id=call_id, reason=reason) for call_id, reason in denials),
    )
    helpers = registry(definition.helpers)
    config = run_config(definition, options, helpers, model)
    port: ModelPort = model or options.connection.open_model()
    try:
        return await _journaled(
            definition,
            None,
            options,
            Given(model=port, abort=abort),
            config=config,
            helpers=helpers,
            journal=journal,
            session_id=session_id,
            decisions=decisions,
        )
    finally:
        if model is None:
            with anyio.CancelScope(shield=True):
                await port.aclose()
