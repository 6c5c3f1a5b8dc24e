"""Tasks as the journal keeps them: a task is one turn of the session its context names.

A task's id is `<context id>-<n>`, the session's n-th turn (from 0), so a task
a restarted server never saw is rebuilt from the journal (`load_session`): its
state from how the turn ended, its artifact the answer. Tasks the server saw
are also kept in memory (their history, as the SDK made it) while it runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from a2a.helpers import get_message_text, new_text_part
from a2a.server.agent_execution import RequestContext, RequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    Artifact,
    InvalidParamsError,
    Message,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
    UnsupportedOperationError,
)

from toolreel.adapters import Journal, Session, TurnSummary, load_session
from toolreel.core import ConfigError, Phase
from toolreel.core.outcomes import FinishReason
from toolreel.shell.engine import submitted

#: The artifact holding a turn's answer.
ANSWER = "answer"

STATES = {
    FinishReason.COMPLETED: TaskState.TASK_STATE_COMPLETED,
    FinishReason.MAX_ITERATIONS: TaskState.TASK_STATE_COMPLETED,
    FinishReason.CANCELLED: TaskState.TASK_STATE_CANCELED,
}


def task_id_of(context_id: str, turn: int) -> str:
    """The id of the task that is turn `turn` of session `context_id`."""
    return f"{context_id}-{turn}"


def parse_task_id(task: str) -> tuple[str, int] | None:
    """The session and turn a task id names (None: not a toolreel task id)."""
    context, _, turn = task.rpartition("-")
    return (context, int(turn)) if context and turn.isdigit() else None


def session_of(journal: Journal, context_id: str) -> Session | None:
    """The session a context names, None while it has no turn."""
    if context_id not in journal.sessions():
        return None
    return load_session(journal, context_id)


def next_turn(session: Session | None) -> int:
    """The turn a new message makes: a paused or unfinished turn's own, else the next."""
    if session is None:
        return 0
    turns = len(session.turns)
    return turns - 1 if turns and session.phase is not Phase.IDLE else turns


def turn_state(session: Session, turn: int) -> TaskState:
    """A task's state from how its turn ended (a paused turn: input-required)."""
    summary = session.turns[turn]
    last = turn == len(session.turns) - 1
    if summary.reason is None:
        if last and session.phase is Phase.AWAITING_APPROVAL:
            return TaskState.TASK_STATE_INPUT_REQUIRED
        return TaskState.TASK_STATE_WORKING
    return STATES.get(summary.reason, TaskState.TASK_STATE_FAILED)


def rebuilt(session: Session, turn: int) -> Task:
    """The task that is a journaled turn: its prompt, its state, its answer."""
    summary: TurnSummary = session.turns[turn]
    context = session.session_id
    ident = task_id_of(context, turn)
    prompt = Message(
        message_id=f"{ident}-prompt",
        context_id=context,
        task_id=ident,
        role=Role.ROLE_USER,
        parts=[new_text_part(summary.prompt)],
    )
    task = Task(id=ident, context_id=context, status=TaskStatus(state=turn_state(session, turn)))
    task.history.append(prompt)
    if summary.reason is not None and summary.text:
        task.artifacts.append(
            Artifact(artifact_id=ANSWER, name=ANSWER, parts=[new_text_part(summary.text)])
        )
    return task


class JournalTaskStore(InMemoryTaskStore):
    """The SDK's in-memory store, falling back on the journal for a task it never saw."""

    def __init__(self, journal: Callable[[], Journal]) -> None:
        """Read tasks from `journal()` (the server's, open while it runs)."""
        super().__init__()
        self.journal = journal
        # New tasks not saved yet: their turn, starting in the journal, is not theirs to show
        # (the SDK must see no task until the executor enqueues it).
        self._coming: set[str] = set()

    def expect(self, task_id: str) -> None:
        """A new task is made under this id: none is found by it until it is saved."""
        self._coming.add(task_id)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Keep the task as the SDK made it."""
        self._coming.discard(task.id)
        await super().save(task, context)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task as last saved, else as the journal keeps its turn."""
        found = await super().get(task_id, context)
        if found is not None or task_id in self._coming:
            return found
        named = parse_task_id(task_id)
        if named is None:
            return None
        context_id, turn = named
        session = session_of(self.journal(), context_id)
        if session is None or turn >= len(session.turns):
            return None
        return rebuilt(session, turn)


class TurnIds(RequestContextBuilder):
    """Names a new task for the turn it makes: `<context id>-<turn>` (module docstring)."""

    def __init__(
        self,
        store: JournalTaskStore,
        check: Callable[[str], object],
        busy: Callable[[str], bool],
    ) -> None:
        """Count turns in the store's journal; `check(context_id)` refuses an id no session
        can have, `busy(context_id)` says whether a turn runs in it now."""
        self._store = store
        self._check = check
        self._busy = busy

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        """A request context whose ids are the session's and its turn's."""
        named = parse_task_id(task_id) if task_id else None
        if named is not None and not context_id:  # a message naming its task alone
            context_id = named[0]
        if params is not None and not task_id:
            context_id = context_id or uuid.uuid4().hex
            self._check(context_id)
            if self._busy(context_id):
                raise UnsupportedOperationError(
                    message=f"a turn is running in context {context_id}: wait for its end, "
                    "or cancel its task"
                )
            text = get_message_text(params.message)
            try:  # the core's own check of a prompt's text (a lone surrogate is refused)
                submitted(text)
            except ConfigError as exc:
                raise InvalidParamsError(message=str(exc)) from exc
            session = session_of(self._store.journal(), context_id)
            paused = session is not None and session.phase is Phase.AWAITING_APPROVAL
            if not paused and not text.strip():
                raise InvalidParamsError(message="the message holds no text to ask the agent")
            turn = next_turn(session)
            task_id = task_id_of(context_id, turn)
            if session is None or turn == len(session.turns):
                self._store.expect(task_id)
        return RequestContext(
            call_context=context,
            request=params,
            task_id=task_id,
            context_id=context_id,
            task=task,
        )
