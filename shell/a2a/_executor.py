"""`TurnExecutor`: each A2A message a turn of the journaled session its context names.

- A message in a context whose turn is not paused is a prompt (its text parts,
  joined): the turn runs, `working` first, its text streamed as chunks of the
  `answer` artifact (then the whole answer, replacing them), then `completed`
  (its answer as the status message), `failed` (why) or `canceled`.
- A turn that holds calls for approval ends the request `input-required`: the
  status message lists the calls as text and as a data part
  `{"approvals": [{"call_id", "name", "arguments"}]}`. The next message to the
  task decides them: a data part `{"approve": [ids], "deny": [ids] or {id: reason}}`
  (calls it names), or the text "yes" / "no" (every held call). Anything else
  leaves the task input-required, saying what is expected.
- `tasks/cancel` interrupts a running turn (the SDK cancels `execute`; the
  Client journals the turn cancelled) or cancels a paused one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from a2a.helpers import get_message_text, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import InvalidParamsError, Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf.json_format import MessageToDict

from toolreel.adapters import Journal, ModelPort
from toolreel.core import AwaitApproval, ConfigError, Phase
from toolreel.core.notices import ApprovalRequested, TextStreamed
from toolreel.core.outcomes import FinishReason
from toolreel.core.record import Value
from toolreel.shell import AgentOptions, Client

from ._tasks import ANSWER

YES = {"yes", "y", "approve", "approved", "ok"}
NO = {"no", "n", "deny", "denied"}


@attrs.frozen(repr=False, eq=False)
class Decision(Value):
    """What a message decides about held calls: ids approved, ids denied with a reason."""

    approve: tuple[str, ...] = ()
    deny: Mapping[str, str] = attrs.field(factory=dict)


class TurnExecutor(AgentExecutor):
    """The SDK's executor: runs toolreel turns (module docstring)."""

    def __init__(
        self, options: AgentOptions, journal: Callable[[], Journal], model: ModelPort | None
    ) -> None:
        """Run turns with `options` on the server's journal, `model` replacing theirs."""
        self._options = options
        self._journal = journal
        self._model = model
        self._running: dict[str, Client] = {}  # task id -> the Client running its turn

    def session_options(self, context_id: str) -> AgentOptions:
        """The options of the session `context_id` names (an id no session can have: invalid
        params)."""
        try:
            return attrs.evolve(self._options, session_id=context_id, journal=self._journal())
        except ConfigError as exc:
            raise InvalidParamsError(message=f"contextId {context_id!r}: {exc}") from exc

    def _client(self, context_id: str) -> Client:
        """A Client of the session `context_id` names."""
        return Client(self.session_options(context_id), model=self._model)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Run (or go on with) the turn the message makes, telling the task's states."""
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        message = context.message
        if context.current_task is None:  # the SDK's rule: a new task is told before its states
            await event_queue.enqueue_event(
                _submitted(context.task_id, context.context_id, message)
            )
        async with self._client(context.context_id) as client:
            self._running[context.task_id] = client
            try:
                await self._turn(client, updater, message)
            finally:
                self._running.pop(context.task_id, None)

    async def _turn(self, client: Client, updater: TaskUpdater, message: Message | None) -> None:
        """Start the turn (or decide its held calls), then follow it to its end or pause."""
        if client.phase is Phase.AWAITING_APPROVAL:
            decision = decision_of(message, client.pending_approvals)
            if isinstance(decision, str):
                await updater.requires_input(_held(updater, client.pending_approvals, decision))
                return
            await _decide(client, decision)
            if client.phase is Phase.AWAITING_APPROVAL:  # some calls still wait for theirs
                await updater.requires_input(_held(updater, client.pending_approvals, None))
                return
            await updater.start_work()
        elif client.phase is not Phase.IDLE:  # a turn a crash interrupted: resumed, finished
            await updater.start_work()
        else:
            prompt = get_message_text(message) if message is not None else ""
            if not prompt.strip():
                raise InvalidParamsError(message="the message holds no text to ask the agent")
            await updater.start_work()
            await client.query(prompt)
        await _finish(client, updater)

    def busy(self, context_id: str) -> bool:
        """Whether a turn of the session `context_id` runs here now."""
        return any(client.session_id == context_id for client in self._running.values())

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Interrupt the task's running turn (`execute` then tells it canceled)."""
        running = self._running.get(context.task_id or "")
        if running is not None:
            await running.interrupt()

    async def cancelled(self, context_id: str) -> None:
        """After `tasks/cancel`: a turn left paused in the journal is cancelled there too."""
        if self.busy(context_id):
            return  # its execute is being cancelled: the Client journals the turn cancelled
        async with self._client(context_id) as client:
            if client.phase is Phase.AWAITING_APPROVAL:
                await client.interrupt()


def _submitted(task_id: str, context_id: str, message: Message | None) -> Task:
    """A new task, its first message the user's."""
    task = Task(
        id=task_id, context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
    )
    if message is not None:
        task.history.append(message)
    return task


async def _decide(client: Client, decision: Decision) -> None:
    """Give the client each decision."""
    for call_id in decision.approve:
        await client.approve(call_id)
    for call_id, reason in decision.deny.items():
        await client.deny(call_id, reason)


async def _finish(client: Client, updater: TaskUpdater) -> None:
    """Stream the turn's text, then tell how it ended (or that it holds calls)."""
    streamed = False
    while True:
        paused: AwaitApproval | None = None
        async for item in client.events():
            if isinstance(item, TextStreamed) and item.text:
                await updater.add_artifact(
                    [new_text_part(item.text)], artifact_id=ANSWER, name=ANSWER, append=streamed
                )
                streamed = True
            elif isinstance(item, AwaitApproval):
                paused = item
        if paused is None:
            break
        await updater.requires_input(_held(updater, paused.requests, None))
        return
    finish = client.last_finish
    if finish is None or finish.reason is FinishReason.CANCELLED:
        await updater.cancel()
        return
    answer = updater.new_agent_message([new_text_part(finish.text or finish.reason.value)])
    if finish.reason in (FinishReason.COMPLETED, FinishReason.MAX_ITERATIONS):
        if finish.text:  # the whole answer, in one part, replaces the chunks streamed
            await updater.add_artifact(
                [new_text_part(finish.text)], artifact_id=ANSWER, name=ANSWER, last_chunk=True
            )
        await updater.complete(answer)
        return
    why = finish.error.message if finish.error is not None else finish.reason.value
    await updater.failed(updater.new_agent_message([new_text_part(f"the turn ended: {why}")]))


def _held(
    updater: TaskUpdater, requests: tuple[ApprovalRequested, ...], problem: str | None
) -> Message:
    """The input-required message: the held calls, and how to decide them."""
    lines = [f"- {r.call.id}: {r.call.name}({r.call.arguments})" for r in requests]
    text = "\n".join(
        [
            *([problem] if problem else []),
            "These calls wait for your approval:",
            *lines,
            'Answer "yes" or "no" (every call), or a data part '
            '{"approve": [call ids], "deny": [call ids]}.',
        ]
    )
    listed = [
        {"call_id": r.call.id, "name": r.call.name, "arguments": _arguments(r.call.arguments)}
        for r in requests
    ]
    parts: list[Part] = [new_text_part(text), new_data_part({"approvals": listed})]
    return updater.new_agent_message(parts)


def _arguments(text: str) -> Any:
    """A call's arguments as JSON when they are, else as the text they are."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def decision_of(message: Message | None, requests: tuple[ApprovalRequested, ...]) -> Decision | str:
    """The decision a message gives about `requests`, or what is wrong with it."""
    held = [r.call.id for r in requests]
    if message is None or message.role == Role.ROLE_AGENT:
        return "no decision was given."
    for part in message.parts:
        if part.HasField("data"):
            return _data_decision(MessageToDict(part.data), held)
    word = get_message_text(message).strip().lower().rstrip(".!")
    if word in YES:
        return Decision(approve=tuple(held))
    if word in NO:
        return Decision(deny=dict.fromkeys(held, ""))
    return f"{word!r} decides nothing."


def _data_decision(data: Any, held: list[str]) -> Decision | str:
    """A data part's decision: ids known, each decided once."""
    if not isinstance(data, dict):
        return "the data part is no object."
    approve = data.get("approve", [])
    deny = data.get("deny", [])
    if isinstance(deny, list):
        deny = dict.fromkeys(deny, "")
    if not isinstance(approve, list) or not isinstance(deny, dict):
        return '"approve" is a list of call ids, "deny" a list or an object of id: reason.'
    named = [*approve, *deny]
    unknown = [i for i in named if i not in held]
    if unknown or not named:
        return f"unknown call ids: {unknown}." if unknown else "no call was decided."
    if len(set(named)) != len(named):
        return "a call was decided twice."
    return Decision(approve=tuple(approve), deny={str(k): str(v) for k, v in deny.items()})
