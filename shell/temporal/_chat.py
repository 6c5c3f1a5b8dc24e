"""A chat session workflow from its caller's side: prompts in, the turn's notices out as they
happen — text while the model writes — and approvals; as the local `Client` offers them.

    async with WorkflowChat(client, "my-chat") as chat:   # the running workflow, or a new one
        await chat.query("What is 25 plus 17?")
        async for notice in chat.events():
            ...   # TextStreamed as the model writes, ToolCallAnnounced, ..., then the Finish

`query` starts the turn with the workflow's `begin` update (refused while a turn
runs: `TurnInProgress`), `approve` / `deny` decide a held call (the `event`
signal), and `events()` reads the session's stream from where the stream stood
before (shell/temporal/_told.py), until the turn's `Finish` or its pause. A turn
this caller began and left unread when it closes is cancelled, as a local
`Client` cancels its own.

`WorkflowChats` opens them for `toolreel.web.app(options, sessions=...)`, and
reads their records into a journal for its session list.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from types import TracebackType

import anyio
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode

from toolreel.adapters import Journal, MemoryJournal, SessionNotFound, structure
from toolreel.core import AwaitApproval, Finish, Phase, PromptSubmitted, UsageError
from toolreel.core.notices import ApprovalRequested, Notice
from toolreel.shell.errors import TurnInProgress

from ._errors import TemporalError
from ._sessions import approve, deny, fetch_record, import_record, open_chat
from ._told import TOPIC, Reading, read
from ._wire import TASK_QUEUE, WORKFLOW, SessionRecord, SessionStart, SessionStatus
from ._workflow import SessionWorkflow

#: A session workflow's handle.
Handle = WorkflowHandle[SessionWorkflow, SessionRecord]
#: How often a caller asks for more of the stream once it has read all there was.
POLL = timedelta(milliseconds=50)
#: The phases in which no turn runs: nothing will come until the caller acts.
STILL = frozenset({Phase.IDLE, Phase.AWAITING_APPROVAL, Phase.AWAITING_RESULTS})


class WorkflowChat:
    """One chat session workflow, driven by its caller (use `async with`).

    Args:
        client: A client of the Temporal server (`connect`).
        session_id: The workflow's id: the running one continues, else a new one starts.
        task_queue: Where its workers serve (a new session's).
        start: A new session's settings (its `one_shot` is False: a chat).
        resume: The workflow must be running already (else `SessionNotFound`).
    """

    def __init__(
        self,
        client: Client,
        session_id: str | None = None,
        *,
        task_queue: str = TASK_QUEUE,
        start: SessionStart | None = None,
        resume: bool = False,
    ) -> None:
        """Prepare; nothing is asked until `async with`."""
        self.client = client
        self.session_id = session_id or uuid.uuid4().hex
        self.task_queue = task_queue
        self.start = start
        self.resume = resume
        self._handle: Handle | None = None
        self._stream = WorkflowStreamClient.create(client, self.session_id)
        self._status = SessionStatus(phase="configuring")
        #: The turn being read and where its items begin, until its end is read.
        self._reading: tuple[Reading, int] | None = None

    async def __aenter__(self) -> WorkflowChat:
        """Find the session's workflow (`resume`), or start it; learn where it stands."""
        if self.resume:
            self._handle = await _running(self.client, self.session_id)
        else:
            self._handle = await open_chat(
                self.client,
                task_queue=self.task_queue,
                session_id=self.session_id,
                start=self.start,
            )
        await self._refresh()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Cancel the turn this caller began and did not read to its end (as a `Client` does);
        shielded: a caller cancelled (a browser gone) still cancels its turn."""
        reading, self._reading = self._reading, None
        if reading is not None and self._handle is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(RPCError):
                await self._handle.signal(SessionWorkflow.cancel)

    @property
    def handle(self) -> Handle:
        """The session's workflow (once open)."""
        if self._handle is None:
            raise UsageError("this WorkflowChat is not open: use `async with`")
        return self._handle

    # --- where it stands -----------------------------------------------------------------

    async def _refresh(self) -> None:
        """Ask the workflow where it stands (its `status` query)."""
        try:
            self._status = await self.handle.query(SessionWorkflow.status)
        except RPCError as exc:
            raise self._error("cannot be asked", exc) from exc

    @property
    def phase(self) -> Phase:
        """Where the session stood when last asked (IDLE while its worker configures it)."""
        return next((phase for phase in Phase if phase.value == self._status.phase), Phase.IDLE)

    @property
    def pending_approvals(self) -> tuple[ApprovalRequested, ...]:
        """The calls held for `approve` / `deny` when last asked, in call order."""
        return tuple(structure(data, ApprovalRequested) for data in self._status.approvals)

    @property
    def iteration(self) -> int:
        """The running turn's model calls when last asked (0 between turns)."""
        return self._status.iteration

    @property
    def paused_round(self) -> frozenset[str]:
        """The ids of the calls of the round a paused turn holds (decided or not)."""
        return frozenset(self._status.paused_round)

    def redact(self, text: str) -> str:
        """`text` as shown (the workers redact what they send: nothing is left to mask)."""
        return text

    # --- turns ---------------------------------------------------------------------------

    async def query(self, prompt: str) -> None:
        """Start a turn of `prompt`; read it with `events()` (or `wait()`).

        Raises:
            ConfigError: The prompt is no valid Unicode text; nothing was sent.
            TurnInProgress: A turn runs or waits for approval.
        """
        PromptSubmitted(text=prompt)  # refused here, not in the workflow
        offset = await self._offset()
        try:
            turn = await self.handle.execute_update(SessionWorkflow.begin, prompt)
        except WorkflowUpdateFailedError as exc:
            why = str(exc.cause) if exc.cause is not None else str(exc)
            if getattr(exc.cause, "type", None) == "TurnInProgress":
                raise TurnInProgress(f"session workflow {self.session_id}: {why}") from exc
            raise self._error("took no prompt", why) from exc
        except RPCError as exc:
            raise self._error("took no prompt", exc) from exc
        self._reading = (Reading(turn=turn), offset)

    async def events(self) -> AsyncIterator[Notice | Finish | AwaitApproval]:
        """The turn's notices as they happen, then its `Finish` (paused: `AwaitApproval`).

        With no turn begun or decided by this caller, it ends at once.
        """
        if self._reading is None:
            return
        reading, offset = self._reading
        items = self._stream.subscribe(TOPIC, from_offset=offset, poll_cooldown=POLL)
        try:
            async for item in items:
                reading, said = read(reading, item.data)
                if reading.over:  # told before its end goes: a reader may stop there
                    self._reading = None
                for notice in said:
                    yield notice
                if reading.over:
                    break
        finally:
            await items.aclose()  # type: ignore[attr-defined]  # an async generator
        await self._refresh()

    async def wait(self) -> Finish | None:
        """Wait for the turn under way (this caller's, or any) to finish or pause; its `Finish`
        (None: it paused, or none ran)."""
        if self._reading is None:
            offset = await self._offset()
            await self._refresh()
            if self.phase in STILL:
                return None
            self._reading = (Reading(turn=self._status.turns), offset)
        last = None
        async for notice in self.events():
            last = notice
        return last if isinstance(last, Finish) else None

    async def approve(self, call_id: str) -> None:
        """Approve a held call; `events()` reads what follows (`UnknownApproval`: none held)."""
        offset = await self._offset()
        await approve(self.handle, call_id)
        await self._decided(offset)

    async def deny(self, call_id: str, reason: str = "") -> None:
        """Deny a held call: the model reads `reason`; `events()` reads what follows."""
        offset = await self._offset()
        await deny(self.handle, call_id, reason)
        await self._decided(offset)

    async def _decided(self, offset: int) -> None:
        """A decision went: what follows it is read from `offset` on."""
        await self._refresh()
        self._reading = (Reading(turn=self._status.turns), offset)

    async def interrupt(self) -> None:
        """Stop the turn under way: it finishes cancelled."""
        try:
            await self.handle.signal(SessionWorkflow.cancel)
        except RPCError as exc:
            raise self._error("took no cancel", exc) from exc

    def _error(self, what: str, why: object) -> TemporalError:
        """A failure to reach the session's workflow: what could not be done, and why."""
        return TemporalError(f"session workflow {self.session_id} {what}: {why}")

    async def _offset(self) -> int:
        """Where the session's stream stands: what comes next is read from here."""
        try:
            return await self._stream.get_offset()
        except RPCError as exc:
            raise self._error("cannot be asked", exc) from exc


async def _running(client: Client, session_id: str) -> Handle:
    """The running workflow of `session_id` (`SessionNotFound` if there is none)."""
    handle = client.get_workflow_handle(session_id, result_type=SessionRecord)
    try:
        described = await handle.describe()
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise SessionNotFound(session_id, "the Temporal server") from exc
        raise TemporalError(f"cannot read session workflow {session_id!r}: {exc}") from exc
    if described.status is not WorkflowExecutionStatus.RUNNING:
        raise SessionNotFound(session_id, "the Temporal server's running sessions")
    return handle


class WorkflowChats:
    """Chat session workflows, as `toolreel.web.app(options, sessions=...)` serves them.

    Each response opens its session's `WorkflowChat` (a new id: a new workflow);
    the session list reads the newest `listed` session workflows of the task
    queue, each imported from its record (`fetch_record`) into a journal.
    """

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str = TASK_QUEUE,
        start: SessionStart | None = None,
        listed: int = 50,
    ) -> None:
        """Sessions on `client`'s server, served by the workers of `task_queue`."""
        self.client = client
        self.task_queue = task_queue
        self.start = start
        self.listed = listed

    def open(self, session_id: str | None, *, resume: bool = False) -> WorkflowChat:
        """The chat of `session_id` (None: a new one; `resume`: it must be running)."""
        return WorkflowChat(
            self.client, session_id, task_queue=self.task_queue, start=self.start, resume=resume
        )

    async def journal(self, session_id: str | None = None) -> Journal:
        """A journal of the session `session_id` (None: of the newest sessions), as their
        workflows hold them; one that cannot be read is left out."""
        ids = [session_id] if session_id is not None else await self._newest()
        journal = MemoryJournal()
        for sid in reversed(ids):  # oldest first: a journal lists in the order written
            try:
                record = await fetch_record(self.client, sid)
            except TemporalError:
                continue
            if record.config:
                import_record(record, journal, sid)
        return journal

    async def _newest(self) -> list[str]:
        """The ids of the newest session workflows of the task queue, newest first."""
        query = f'WorkflowType = "{WORKFLOW}" AND TaskQueue = "{self.task_queue}"'
        ids: list[str] = []
        try:
            async for execution in self.client.list_workflows(query, limit=self.listed):
                if execution.id not in ids:
                    ids.append(execution.id)
        except RPCError as exc:
            raise TemporalError(f"cannot list session workflows: {exc}") from exc
        return ids
