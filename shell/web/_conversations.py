"""Where the app's sessions live and run: a `Conversations`, opening one `Conversation` per
response.

`app(options)` serves sessions of its journal, each turn in a `Client` of its own
in this process (`LocalConversations`). `app(options, sessions=...)` serves them
from anything with the same two methods: `toolreel.temporal.WorkflowChats` serves
session workflows on Temporal (their workers run the model and the tools; the
text streams while the model writes). The routes, the streams and the approvals
are the same either way: they speak only what `Conversation` offers.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

import attrs

from toolreel.adapters import Journal, ModelPort
from toolreel.core import AwaitApproval, Finish, Phase, UsageError
from toolreel.core.notices import ApprovalRequested, Notice
from toolreel.core.record import Value
from toolreel.shell import AgentOptions, Client


class Conversation(Protocol):
    """One open session, as a response drives it (what the local `Client` offers)."""

    @property
    def session_id(self) -> str:
        """The session's id."""
        ...

    @property
    def phase(self) -> Phase:
        """Where the session stands (IDLE between turns)."""
        ...

    @property
    def pending_approvals(self) -> tuple[ApprovalRequested, ...]:
        """The calls held for a human's decision, in call order."""
        ...

    @property
    def iteration(self) -> int:
        """The running turn's model calls (0 between turns)."""
        ...

    @property
    def paused_round(self) -> frozenset[str]:
        """The ids of the calls of the round a paused turn holds (decided or not)."""
        ...

    async def query(self, prompt: str) -> None:
        """Start a turn of `prompt` (read it with `events()`)."""
        ...

    def events(self) -> AsyncIterator[Notice | Finish | AwaitApproval]:
        """The turn's notices as they happen, then its `Finish` or its pause."""
        ...

    async def wait(self) -> Finish | None:
        """Wait for the turn under way to finish (its `Finish`) or pause (None)."""
        ...

    async def approve(self, call_id: str) -> None:
        """Approve a held call (`UnknownApproval` if it is not held)."""
        ...

    async def deny(self, call_id: str, reason: str = "") -> None:
        """Deny a held call: the model reads `reason`."""
        ...

    def redact(self, text: str) -> str:
        """`text` with the session's secrets masked (what an error says goes to the page)."""
        ...


class Conversations(Protocol):
    """Where the app's sessions live and run."""

    def open(
        self, session_id: str | None, *, resume: bool = False
    ) -> AbstractAsyncContextManager[Conversation]:
        """The session `session_id` (None: a new one), open for one response; `resume`: it
        must exist (else `SessionNotFound`)."""
        ...

    async def journal(self, session_id: str | None = None) -> Journal:
        """A journal holding the session `session_id` (None: the sessions to list)."""
        ...


@attrs.frozen(kw_only=True, repr=False, eq=False)
class LocalConversations(Value):
    """The sessions of `options.journal`, each opened in a `Client` of its own (with `model`)."""

    options: AgentOptions
    model: ModelPort | None = None

    @contextlib.asynccontextmanager
    async def open(
        self, session_id: str | None, *, resume: bool = False
    ) -> AsyncIterator[Conversation]:
        """A `Client` of the session, open while the block runs."""
        options = attrs.evolve(self.options, session_id=session_id)
        opened = (
            Client.resume(session_id or "", options, model=self.model)
            if resume
            else Client(options, model=self.model)
        )
        async with opened as client:
            yield LocalConversation(client)

    async def journal(self, session_id: str | None = None) -> Journal:
        """The options' journal (an open one: `app` opens a path it is given)."""
        given = self.options.journal
        if given is None or isinstance(given, str | Path):
            raise UsageError("the options name no open journal to read sessions from")
        return given


@attrs.frozen(repr=False, eq=False)
class LocalConversation(Value):
    """A `Client`, as a `Conversation`."""

    client: Client

    @property
    def session_id(self) -> str:
        """The client's session."""
        return self.client.session_id

    @property
    def phase(self) -> Phase:
        """The client's phase."""
        return self.client.phase

    @property
    def pending_approvals(self) -> tuple[ApprovalRequested, ...]:
        """The calls the client's turn holds."""
        return self.client.pending_approvals

    @property
    def iteration(self) -> int:
        """The running turn's model calls."""
        turn = self.client.runner.state.turn
        return turn.iteration if turn is not None else 0

    @property
    def paused_round(self) -> frozenset[str]:
        """The calls of the round the paused turn holds."""
        turn = self.client.runner.state.turn
        if self.phase is not Phase.AWAITING_APPROVAL or turn is None or turn.pending is None:
            return frozenset()
        return frozenset(call.id for call in turn.pending.calls)

    async def query(self, prompt: str) -> None:
        """`Client.query`."""
        await self.client.query(prompt)

    def events(self) -> AsyncIterator[Notice | Finish | AwaitApproval]:
        """`Client.events`."""
        return self.client.events()

    async def wait(self) -> Finish | None:
        """`Client.wait`."""
        return await self.client.wait()

    async def approve(self, call_id: str) -> None:
        """`Client.approve`."""
        await self.client.approve(call_id)

    async def deny(self, call_id: str, reason: str = "") -> None:
        """`Client.deny`."""
        await self.client.deny(call_id, reason)

    def redact(self, text: str) -> str:
        """The client's secrets masked."""
        return self.client.redactor.text(text)
