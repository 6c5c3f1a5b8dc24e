"""A caller's side: connect, start or run a session workflow, and import one into a journal.

    client = await connect("127.0.0.1:7233")
    record = await run_session(client, "What is 25 plus 17?", task_queue="toolreel")
    import_workflow(record, journal, "my-session")     # toolreel replay/show work on it

The workflow history is the journal: every event the workflow folded, in
order, comes back from its result (a finished session) or its `record` query
(a running one), and folding them again through `step` rebuilds each step
with its effects, as a toolreel journal keeps them. A long session continues
as new between turns: its earlier runs' events come from their `record`
query (a closed run is answered by a worker replaying it), joined in order.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from toolreel.adapters import Journal, SessionError, Step, structure
from toolreel.adapters.records import config_of, event_data, event_of
from toolreel.core import (
    Approved,
    Denied,
    Finish,
    LoopConfig,
    Phase,
    PromptSubmitted,
    initial_state,
    misuse,
    step,
)
from toolreel.core.notices import ApprovalRequested
from toolreel.shell.errors import UnknownApproval

from ._errors import TemporalError
from ._wire import TASK_QUEUE, WORKFLOW, SessionRecord, SessionStart
from ._workflow import SessionWorkflow


async def connect(address: str, *, namespace: str = "default") -> Client:
    """A client of the Temporal server at HOST:PORT (`TemporalError` if it cannot be reached)."""
    await _reachable(address)
    try:
        return await Client.connect(address, namespace=namespace)
    except Exception as exc:  # the SDK's RuntimeError, RPCError, ...
        raise TemporalError(f"cannot reach Temporal at {address}: {exc}") from exc


async def _reachable(address: str) -> None:
    """Refuse an address nothing listens on before the SDK's runtime is involved.

    (A failed `Client.connect` can leave the SDK's threads to crash the
    interpreter as it exits; a plain TCP probe fails cleanly.)
    """
    host, _, port = address.rpartition(":")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 10)
    except (OSError, ValueError, TimeoutError) as exc:
        raise TemporalError(f"cannot reach Temporal at {address}: {exc}") from exc
    writer.close()


async def start_session(
    client: Client,
    prompt: str | None = None,
    *,
    task_queue: str = TASK_QUEUE,
    session_id: str | None = None,
    start: SessionStart | None = None,
) -> WorkflowHandle[SessionWorkflow, SessionRecord]:
    """Start a session workflow (its id is the session id); `prompt` is its first turn.

    `start` sets the rest (system prompt, iterations, chat or one-shot, heartbeat);
    its own prompt is replaced by `prompt` when one is given.
    """
    settings = start or SessionStart()
    if prompt is not None:
        PromptSubmitted(text=prompt)  # no prompt (`ConfigError`): refused here, not in the workflow
        settings = SessionStart(**{**settings.__dict__, "prompt": prompt})
    try:
        return await client.start_workflow(
            WORKFLOW,
            settings,
            id=session_id or uuid.uuid4().hex,
            task_queue=task_queue,
            result_type=SessionRecord,
        )
    except (RPCError, WorkflowAlreadyStartedError) as exc:
        raise TemporalError(f"cannot start session workflow: {exc}") from exc


async def open_chat(
    client: Client,
    *,
    task_queue: str = TASK_QUEUE,
    session_id: str | None = None,
    start: SessionStart | None = None,
) -> WorkflowHandle[SessionWorkflow, SessionRecord]:
    """A chat session workflow: the running one of id `session_id`, else a new one."""
    settings = SessionStart(**{**(start or SessionStart()).__dict__, "one_shot": False})
    try:
        return await start_session(
            client, task_queue=task_queue, session_id=session_id, start=settings
        )
    except TemporalError as exc:
        if session_id is None or not isinstance(exc.__cause__, WorkflowAlreadyStartedError):
            raise
    return client.get_workflow_handle(session_id, result_type=SessionRecord)


async def send_prompt(handle: WorkflowHandle[SessionWorkflow, SessionRecord], text: str) -> Finish:
    """One turn of a chat session workflow: the prompt, answered with its `Finish`.

    A prompt that is no valid Unicode text is a `ConfigError`, and is not sent.
    """
    PromptSubmitted(text=text)  # refused here, not in the workflow
    try:
        data = await handle.execute_update(SessionWorkflow.prompt, text)
    except (WorkflowUpdateFailedError, RPCError) as exc:
        raise TemporalError(f"session workflow {handle.id} took no prompt: {exc}") from exc
    return structure(data, Finish)


async def pending_approvals(
    handle: WorkflowHandle[SessionWorkflow, SessionRecord],
) -> tuple[ApprovalRequested, ...]:
    """The calls the session's turn holds for a human's decision (none: it is not paused)."""
    try:
        data = await handle.query(SessionWorkflow.approvals)
    except RPCError as exc:
        raise TemporalError(f"session workflow {handle.id} cannot be asked: {exc}") from exc
    return tuple(structure(item, ApprovalRequested) for item in data)


async def approve(handle: WorkflowHandle[SessionWorkflow, SessionRecord], call_id: str) -> None:
    """Approve one held call (a signal); the turn goes on once every held call is decided."""
    await _decide(handle, Approved(call_id=call_id))


async def deny(
    handle: WorkflowHandle[SessionWorkflow, SessionRecord], call_id: str, reason: str = ""
) -> None:
    """Deny one held call; `reason` is the result the model reads."""
    await _decide(handle, Denied(call_id=call_id, reason=reason))


async def _decide(
    handle: WorkflowHandle[SessionWorkflow, SessionRecord], decision: Approved | Denied
) -> None:
    """Signal a decision for a call the workflow holds now; any other: `UnknownApproval`."""
    held = [request.call.id for request in await pending_approvals(handle)]
    if decision.call_id not in held:  # refused in the core's words, in the session's phase
        try:
            said = await handle.query(SessionWorkflow.phase)
        except RPCError as exc:
            raise TemporalError(f"session workflow {handle.id} cannot be asked: {exc}") from exc
        phase = next((phase for phase in Phase if phase.value == said), Phase.IDLE)
        error = misuse(phase, decision, held)
        raise UnknownApproval(f"session workflow {handle.id}: {error}") from error
    try:
        await handle.signal(SessionWorkflow.event, event_data(decision))
    except RPCError as exc:
        raise TemporalError(f"session workflow {handle.id} took no decision: {exc}") from exc


async def run_session(
    client: Client,
    prompt: str,
    *,
    task_queue: str = TASK_QUEUE,
    session_id: str | None = None,
    start: SessionStart | None = None,
) -> SessionRecord:
    """Run one prompt as a one-shot session workflow; its record once the turn is over."""
    settings = SessionStart(**{**(start or SessionStart()).__dict__, "one_shot": True})
    handle = await start_session(
        client, prompt, task_queue=task_queue, session_id=session_id, start=settings
    )
    return await _joined(client, handle.id, await _result(handle))


async def _result(handle: WorkflowHandle[Any, SessionRecord]) -> SessionRecord:
    """A session workflow's result (`TemporalError` if it failed)."""
    try:
        return await handle.result()
    except (WorkflowFailureError, RPCError) as exc:
        raise TemporalError(f"workflow {handle.id} failed: {_innermost(exc)}") from exc


def _innermost(exc: BaseException) -> str:
    """What is said at the bottom of an exception's causes (the worker's own error)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return str(exc) or type(exc).__name__


async def fetch_record(client: Client, workflow_id: str) -> SessionRecord:
    """A session workflow's whole record: every run's events, its last run's finish.

    The last run's is its result if it completed, else its `record` query; the
    runs it continued are asked with their `record` query (a worker must poll).
    """
    handle = client.get_workflow_handle(workflow_id, result_type=SessionRecord)
    try:
        described = await handle.describe()
        if described.status is WorkflowExecutionStatus.COMPLETED:
            record = await _result(handle)
        else:
            record = await handle.query(SessionWorkflow.record)
    except RPCError as exc:
        raise TemporalError(f"cannot read session workflow {workflow_id!r}: {exc}") from exc
    return await _joined(client, workflow_id, record)


async def _joined(client: Client, workflow_id: str, record: SessionRecord) -> SessionRecord:
    """`record` with the events of the runs it continued before its own (rule 7)."""
    if not record.runs:
        return record
    events: list[dict[str, Any]] = []
    for run_id in record.runs:
        earlier = client.get_workflow_handle(workflow_id, run_id=run_id, result_type=SessionRecord)
        try:
            part: SessionRecord = await earlier.query(SessionWorkflow.record)
        except RPCError as exc:
            raise TemporalError(
                f"cannot read run {run_id} of session workflow {workflow_id!r}: {exc}"
            ) from exc
        events.extend(part.events)
    return dataclasses.replace(record, events=[*events, *record.events], runs=[])


def last_finish(record: SessionRecord) -> Finish | None:
    """How the record's last turn ended, if one did."""
    return structure(record.finish, Finish) if record.finish is not None else None


def import_record(record: SessionRecord, journal: Journal, session_id: str) -> str:
    """Write a session workflow's record into `journal` as session `session_id`.

    Each event is folded through `step` again, so every step keeps the effects
    it had in the workflow; `toolreel replay` then checks them like any session's.
    """
    if record.runs:
        raise TemporalError(
            f"the record of {session_id!r} is one run's of several: `fetch_record` joins them"
        )
    if session_id in journal.sessions():
        raise SessionError(f"session {session_id!r} already exists in the journal")
    config = config_of(record.config)
    steps = _steps(config, record.events)
    lease = journal.begin(session_id, config)
    try:
        journal.append(session_id, steps)
    finally:
        journal.release(lease)
    return session_id


def _steps(config: LoopConfig, events: list[dict[str, Any]]) -> list[Step]:
    """Each event folded again through `step`, with its effects."""
    steps = []
    state = initial_state(config)
    for seq, data in enumerate(events, start=1):
        event = event_of(data)
        state, effects = step(state, event)
        steps.append(Step(seq=seq, event=event, effects=effects))
    return steps


async def run_agent(
    client: Client,
    agent: str,
    input: Any = None,
    *,
    task_queue: str = TASK_QUEUE,
    run_id: str | None = None,
    start: SessionStart | None = None,
) -> SessionRecord:
    """Run the agent a worker holds as `agent` on `input` (JSON data) as a session
    workflow; its record (`start` sets the heartbeat and model attempts).

    `agent_finish(record)` says how it ended; `import_record` journals it as an agent run.
    """
    settings = dataclasses.replace(
        start or SessionStart(), agent=agent, input=input, prompt=None, one_shot=True
    )
    try:
        handle = await client.start_workflow(
            WORKFLOW,
            settings,
            id=run_id or uuid.uuid4().hex,
            task_queue=task_queue,
            result_type=SessionRecord,
        )
    except (RPCError, WorkflowAlreadyStartedError) as exc:
        raise TemporalError(f"cannot start agent workflow: {exc}") from exc
    return await _result(handle)


def agent_finish(record: SessionRecord) -> Finish:
    """How an agent run's record ended: its `Finish` (`TemporalError` for a run not finished).

    `finish.outcome` is `Produced(output)` when it gave its output; the agent API's
    reading of it (`AgentOutput` or `AgentError`): `toolreel.adapters`'s view
    `agent_outcome(finish)`.
    """
    if record.finish is None:
        raise TemporalError("the agent run has not finished")
    return structure(record.finish, Finish)


async def import_workflow(
    client: Client, workflow_id: str, journal: Journal, session_id: str | None = None
) -> str:
    """Import a session workflow into `journal` (as `session_id`, default its workflow id)."""
    record = await fetch_record(client, workflow_id)
    return import_record(record, journal, session_id or workflow_id)
