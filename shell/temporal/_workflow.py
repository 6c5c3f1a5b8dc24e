"""The session workflow: `step` folded inside Temporal, each effect in its Temporal form.

Theory of operation. The workflow is the Driver (shell/_driver.py) with
Temporal underneath: it feeds the pure reducer one event at a time, in the
order they arrive, and carries out each effect the way Temporal makes durable:

1. `CallModel` is an activity that streams the call on a worker and returns its
   events; they are folded in order once the call is over (a worker that dies
   mid-stream is retried on another: no partial response is ever folded).
2. `RunTool` is one activity per call, all of a round at once. An idempotent
   tool is retried by Temporal; any other runs at most once
   (`maximum_attempts=1`): a worker lost after it may have started gives what
   toolreel gives on resume, `ToolInterrupted` ("interrupted; outcome unknown").
   `Reflect` is one too (an agent's reflection handler), and `Validate` (its
   output's schema, then its validators; a lost one fails with one problem).
3. `AskHook` (and `TellHook`) are activities; `StartTimer` is a durable timer.
4. `Emit`/`Persist` need nothing durable here: the history is the journal. `Finish`
   ends the turn; what is still running for it is cancelled, and its late answers
   dropped. Effects the caller answers (`ResultsRequested` in manual mode, a held
   call's decision) wait for the caller's `event` signal.
5. The caller's facts arrive as the `event` signal (any core event as JSON
   data: a prompt, a manual result, a cancel, a decision); prompts queue until
   the turn before them is over. `prompt` is the same as an update that
   answers with the turn's `Finish`; `close` ends a chat once it is idle.
6. An effect's activity id carries its digest (`effect_digest`), so Temporal's
   replayer rejects a reducer that would now issue different effects.
7. Between turns, once the run has folded `continue_after` events or its
   history holds as many (or Temporal suggests it), the session continues as
   new: the new run starts from the idle state as JSON data (`Carried`), so
   its history, the next request and the next turn's effects are the ones
   the old run would have made. Nothing else runs then: no turn, no prompt
   waiting, no handler unfinished.

8. What the callers are told streams (shell/temporal/_telling.py, _told.py): the
   workflow tells its stream every `Emit`, `Persist`, `Finish` and `AwaitApproval`
   as it folds, and each model call as it starts it; the call's activity puts the
   text the model writes there while the call runs. The workflow never reads the
   stream: it folds what the activity returns, so the journal is exact. `begin`
   starts a turn (refused while one runs) and answers with its number; `status`
   says where the session stands.

Every event folded is kept, in order (`record` query, and the workflow's
result), with the runs continued before (`runs`): `import_workflow` joins
them and folds them again into a toolreel journal.

An agent run is this workflow too (`SessionStart.agent`): `configure` makes its
config (a structured output's) and its prompt on a worker holding the
definition, and it is one-shot; the `cancel` signal ends it cancelled.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, cast

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from toolreel.adapters import structure, unstructure
from toolreel.adapters.records import config_of, effect_data, event_data, event_of
from toolreel.adapters.transcript import output_tool
from toolreel.core import (
    AskHook,
    AwaitApproval,
    CallModel,
    Cancelled,
    ConfigError,
    Emit,
    Event,
    Finish,
    HookDecided,
    LoopConfig,
    ModelCallFailed,
    Persist,
    Phase,
    PromptSubmitted,
    Reflect,
    RunTool,
    StartTimer,
    State,
    StepError,
    TellHook,
    TimerFired,
    ToolInterrupted,
    Validate,
    ValidationFinished,
    awaiting_approval,
    awaiting_results,
    initial_state,
    step,
    well_formed,
)
from toolreel.core.hooks import Blocked
from toolreel.shell.engine import in_progress

from ._activity_options import ATTEMPTS, MARGIN, activity_options, cause, spawn
from ._telling import Telling
from ._wire import (
    ASK_HOOK,
    CALL_MODEL,
    CONFIGURE,
    REFLECT,
    RUN_TOOL,
    TELL_HOOK,
    VALIDATE,
    WORKFLOW,
    Carried,
    HookRequest,
    ModelCall,
    OutputCheck,
    SessionRecord,
    SessionSetup,
    SessionStart,
    SessionStatus,
    ToolRun,
    effect_digest,
)


@workflow.defn(name=WORKFLOW)
class SessionWorkflow:
    """One toolreel session (see the module docstring)."""

    @workflow.init
    def __init__(self, start: SessionStart) -> None:
        """A session not yet configured; `start.prompt` is its first prompt."""
        self._start = start
        self._setup: SessionSetup | None = None
        self._state: State | None = None
        #: Events to fold: (the turn they belong to, or None for the caller's; the event;
        #: the model call whose activity returned it, if one did).
        self._inbox: deque[tuple[int | None, Event, str | None]] = deque()
        self._prompts: deque[PromptSubmitted] = deque()
        self._events: list[dict[str, Any]] = []
        self._finishes: list[dict[str, Any]] = []
        self._rejected: list[str] = []
        self._turns = 0  # turns finished: a task's answer for an earlier turn is late
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False
        self._seq = 0
        self._runs: list[str] = []
        self._last: dict[str, Any] | None = None  # the last turn's Finish before this run
        self._answering = 0  # `prompt` updates not yet answered
        self._telling = Telling(start.carried.stream if start.carried is not None else None)
        if start.carried is not None:
            self._go_on(start.carried)
        if start.prompt is not None:
            self._prompts.append(PromptSubmitted(text=start.prompt))

    @workflow.run
    async def run(self, start: SessionStart) -> SessionRecord:
        """Configure on a worker (unless continued), then fold events until over or continued."""
        if self._setup is None:
            self._setup = await workflow.execute_activity(
                CONFIGURE,
                start,
                result_type=SessionSetup,
                start_to_close_timeout=timedelta(seconds=60),
            )
            self._state = initial_state(self._config())
            if self._setup.prompt is not None:  # an agent run's, its definition's
                self._prompts.append(PromptSubmitted(text=self._setup.prompt))
        while True:
            await workflow.wait_condition(self._ready)
            if not self._next():
                break
            if self._due():
                await workflow.wait_condition(lambda: self._settled() or not self._due())
                if self._due():  # at once, in this activation: no prompt can come meanwhile
                    self._telling.detach()
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    workflow.continue_as_new(self._carried())
        self._cancel_tasks()
        self._telling.detach()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.record()

    # --- the caller's side --------------------------------------------------------

    @workflow.signal
    def event(self, data: dict[str, Any]) -> None:
        """A fact from the caller (any core event as JSON data): a prompt, a result, a cancel."""
        try:
            event = event_of(data)
        except Exception as exc:  # a signal that is no event must not wedge the workflow
            self._rejected.append(f"not an event ({type(exc).__name__}): {data!r:.200}")
            return
        if isinstance(event, PromptSubmitted):
            self._prompts.append(event)
        else:
            self._inbox.append((None, cast(Event, event), None))

    @workflow.signal
    def cancel(self) -> None:
        """Stop the turn under way: it finishes cancelled (an agent run: `EXECUTION_CANCELLED`)."""
        self._inbox.append((None, Cancelled(), None))

    @workflow.signal
    def close(self) -> None:
        """End the session once no turn runs and no prompt waits."""
        self._closing = True

    @workflow.update
    async def prompt(self, text: str) -> dict[str, Any]:
        """Send a prompt; answered with its turn's `Finish` (JSON data) once the turn is over."""
        running = self._state is not None and self._state.phase is not Phase.IDLE
        index = len(self._finishes) + len(self._prompts) + int(running)
        self._prompts.append(PromptSubmitted(text=text))
        self._answering += 1
        try:
            await workflow.wait_condition(lambda: len(self._finishes) > index)
        finally:
            self._answering -= 1
        return self._finishes[index]

    @workflow.update
    def begin(self, text: str) -> int:
        """Start a turn of `text` now; its number (the stream's items of it carry it).

        Refused, and nothing recorded, while a turn runs, waits for approval or a
        prompt waits, and once the session is closing (`validate_begin`).
        """
        self._prompts.append(PromptSubmitted(text=text))
        return (self._state.turns if self._state is not None else 0) + 1

    @begin.validator
    def validate_begin(self, text: str) -> None:
        """Refuse a prompt that cannot start a turn now, saying why."""
        try:
            PromptSubmitted(text=text)
        except ConfigError as exc:
            raise ApplicationError(str(exc), type="ConfigError") from exc
        if self._closing or self._over():
            raise ApplicationError("the session is closed", type="SessionClosed")
        held = awaiting_approval(self._state) if self._state is not None else ()
        if held:
            ids = [request.call.id for request in held]
            message = f"the turn waits for approval of {ids}: approve or deny each first"
            raise ApplicationError(message, type="TurnInProgress")
        if self._prompts or self._inbox or not (self._idle() or self._state is None):
            raise ApplicationError("a turn is still running", type="TurnInProgress")

    @workflow.query
    def status(self) -> SessionStatus:
        """Where the session stands: its phase, turns, held calls (`SessionStatus`)."""
        if self._state is None:
            return SessionStatus(phase="configuring")
        turn = self._state.turn
        paused = self._state.phase is Phase.AWAITING_APPROVAL and turn is not None
        pending = turn.pending if paused and turn is not None else None
        return SessionStatus(
            phase=self._state.phase.value,
            turns=self._state.turns,
            iteration=turn.iteration if turn is not None else 0,
            approvals=unstructure(awaiting_approval(self._state)),
            paused_round=[call.id for call in pending.calls] if pending is not None else [],
        )

    @workflow.query
    def record(self) -> SessionRecord:
        """The config and every event folded so far, in order."""
        config = self._setup.config if self._setup is not None else {}
        last = self._finishes[-1] if self._finishes else self._last
        return SessionRecord(
            config=config, events=list(self._events), finish=last, runs=list(self._runs)
        )

    @workflow.query
    def transcript(self) -> list[dict[str, Any]]:
        """The history as JSON messages (the running turn's rounds included)."""
        if self._state is None:
            return []
        data: list[dict[str, Any]] = unstructure(in_progress(self._state))
        return data

    @workflow.query
    def pending(self) -> list[dict[str, Any]]:
        """Manual mode: the calls whose results the turn waits for, as JSON data."""
        if self._state is None:
            return []
        data: list[dict[str, Any]] = unstructure(awaiting_results(self._state))
        return data

    @workflow.query
    def approvals(self) -> list[dict[str, Any]]:
        """The calls the turn holds for a human's `Approved` / `Denied`, as JSON data."""
        if self._state is None:
            return []
        data: list[dict[str, Any]] = unstructure(awaiting_approval(self._state))
        return data

    @workflow.query
    def phase(self) -> str:
        """Where the session stands ("idle" between turns)."""
        return "configuring" if self._state is None else self._state.phase.value

    @workflow.query
    def rejected(self) -> list[str]:
        """The caller's events refused: not events, or impossible now (a StepError's message)."""
        return list(self._rejected)

    # --- continuing as new (rule 7) -------------------------------------------------

    def _go_on(self, carried: Carried) -> None:
        """Take up a session where the run it continued left it."""
        self._setup = carried.setup
        self._state = structure(carried.state, State)
        self._runs = list(carried.runs)
        self._seq = carried.seq
        self._last = carried.finish

    def _due(self) -> bool:
        """Between turns, with nothing to do, and this run has grown past its bound."""
        if self._inbox or self._prompts or self._closing or not self._idle() or self._over():
            return False
        info = workflow.info()
        bound = self._start.continue_after
        grown = len(self._events) >= bound or info.get_current_history_length() >= bound
        return grown or info.is_continue_as_new_suggested()

    def _settled(self) -> bool:
        """No `prompt` update answering and no effect's task still running (a caller's
        poll of the stream may wait: `Telling.detach` lets it go)."""
        return self._answering == 0 and all(task.done() for task in self._tasks)

    def _carried(self) -> SessionStart:
        """The next run's input: this one's settings, and the session as it stands."""
        assert self._setup is not None and self._state is not None
        carried = Carried(
            setup=self._setup,
            state=unstructure(self._state),
            runs=[*self._runs, workflow.info().run_id],
            seq=self._seq,
            finish=self._finishes[-1] if self._finishes else self._last,
            stream=self._telling.kept(),
        )
        return dataclasses.replace(self._start, prompt=None, carried=carried)

    # --- folding ------------------------------------------------------------------

    def _config(self) -> LoopConfig:
        """The session's loop config, as the worker's `configure` made it."""
        assert self._setup is not None
        config = config_of(self._setup.config)
        assert isinstance(config, LoopConfig)
        return config

    def _idle(self) -> bool:
        """No turn runs."""
        return self._state is not None and self._state.phase is Phase.IDLE

    def _over(self) -> bool:
        """The session is over: idle, no prompt waiting, and closed (or one-shot and done)."""
        done = self._closing or (self._start.one_shot and bool(self._finishes))
        return done and self._idle() and not self._prompts

    def _ready(self) -> bool:
        """Something to fold, or the session is over."""
        return bool(self._inbox) or (bool(self._prompts) and self._idle()) or self._over()

    def _next(self) -> bool:
        """Fold the next event; False once the session is over."""
        if self._inbox:
            turn, event, call = self._inbox.popleft()
            if turn is None or turn == self._turns:
                self._fold(event, call)
            return True
        if self._prompts and self._idle():
            self._fold(self._prompts.popleft())
            return True
        return not self._over()

    def _fold(self, event: Event, call: str | None = None) -> None:
        """Apply one event, well-formed (core/_wellformed.py), and carry out its effects in
        order (`call`: the model call whose activity returned the event, if one did)."""
        assert self._state is not None
        event = well_formed(event)  # what a model, a tool or a hook sent: as journals hold it
        try:
            self._state, effects = step(self._state, event)
        except StepError as exc:  # the caller's event, impossible now: refused, not folded
            self._rejected.append(str(exc))
            return
        self._seq += 1
        self._events.append(event_data(event))
        if isinstance(event, PromptSubmitted):
            self._telling.turn_begins()
        told = self._state.turns
        for index, effect in enumerate(effects):
            key = f"{self._seq}.{index}-{effect_digest(effect)}"
            if isinstance(effect, Emit | Persist | Finish | AwaitApproval):
                self._telling.told(told, effect_data(effect), call)
            match effect:
                case CallModel():
                    self._telling.calling(told, key)
                    self._spawn(self._call_model(effect, key, self._turns))
                case RunTool() | Reflect():
                    self._spawn(self._run_tool(effect, key, self._turns))
                case Validate():
                    self._spawn(self._validate(effect, key, self._turns))
                case AskHook():
                    self._spawn(self._ask_hook(effect, key, self._turns))
                case TellHook():
                    self._spawn(self._tell_hook(effect, key))
                case StartTimer():
                    self._spawn(self._timer(effect, self._turns))
                case Finish():
                    self._finishes.append(unstructure(effect))
                    self._turns += 1
                    self._cancel_tasks()
                case _:
                    pass  # Emit, Persist: the history is the journal; the rest the caller answers

    def _spawn(self, work: Awaitable[None]) -> None:
        """Run an effect's work in the background."""
        self._tasks = spawn(self._tasks, work)

    def _cancel_tasks(self) -> None:
        """Cancel what still runs for a turn that is over (its answers would be late)."""
        for task in self._tasks:
            task.cancel()
        self._tasks = []

    def _post(self, turn: int, events: list[Event], call: str | None = None) -> None:
        """Queue an effect's answering events for the turn that asked (captured at spawn);
        `call`: the model call's key, if they are its events."""
        self._inbox.extend((turn, event, call) for event in events)

    # --- the effects ----------------------------------------------------------------

    def _options(self, key: str, timeout: timedelta, attempts: int) -> dict[str, Any]:
        """Activity options: its id, timeouts, heartbeat and retries."""
        return activity_options(key, timeout, attempts, self._start.heartbeat_seconds)

    async def _answered(
        self,
        turn: int,
        call: Callable[[], Awaitable[Any]],
        decode: Callable[[Any], list[Event]],
        lost: Callable[[ActivityError], list[Event]],
        source: str | None = None,
    ) -> None:
        """Await an activity; post its events, or what its loss means, for `turn`
        (`source`: a model call's key)."""
        try:
            result = await call()
        except ActivityError as exc:
            self._post(turn, lost(exc), source)
            return
        self._post(turn, decode(result), source)

    async def _call_model(self, effect: CallModel, key: str, turn: int) -> None:
        """The model call as an activity; its events folded in order."""
        assert self._setup is not None
        options = self._options(
            key, timedelta(seconds=self._setup.model_timeout) + MARGIN, self._start.model_attempts
        )

        def lost(exc: ActivityError) -> list[Event]:
            message = f"model call activity failed: {cause(exc)}"
            return [ModelCallFailed(retryable=False, message=message)]

        told = ModelCall(
            request=unstructure(effect.request),
            output_tool=output_tool(self._config().output),
            stream_seconds=self._start.stream_seconds,
        )
        await self._answered(
            turn,
            lambda: workflow.execute_activity(
                CALL_MODEL, told, result_type=list[dict[str, Any]], **options
            ),
            lambda found: [_event(data) for data in found],
            lost,
            key,
        )

    async def _run_tool(self, effect: RunTool | Reflect, key: str, turn: int) -> None:
        """One tool call or reflection as an activity; a tool call that is not idempotent is
        never tried twice."""
        assert self._setup is not None
        call = effect.call
        reflected = isinstance(effect, Reflect)
        once = not reflected and call.name not in self._setup.idempotent
        seconds = self._setup.timeouts.get(call.name, 60.0)
        options = self._options(key, timedelta(seconds=seconds) + MARGIN, 1 if once else ATTEMPTS)
        run = ToolRun(call=unstructure(call), agent=self._start.agent)
        await self._answered(
            turn,
            lambda: workflow.execute_activity(
                REFLECT if reflected else RUN_TOOL, run, result_type=dict[str, Any], **options
            ),
            lambda data: [_event(data)],
            lambda _: [ToolInterrupted(call_id=call.id)],
        )

    async def _validate(self, effect: Validate, key: str, turn: int) -> None:
        """An agent's output through its schema, then its validators, as an activity."""
        assert self._start.agent is not None
        options = self._options(key, timedelta(seconds=60), ATTEMPTS)
        check = OutputCheck(agent=self._start.agent, attempt=effect.attempt, output=effect.output)

        def lost(exc: ActivityError) -> list[Event]:
            problem = f"validation activity failed: {exc}"
            return [ValidationFinished(attempt=effect.attempt, problems=(problem,))]

        await self._answered(
            turn,
            lambda: workflow.execute_activity(
                VALIDATE, check, result_type=dict[str, Any], **options
            ),
            lambda data: [_event(data)],
            lost,
        )

    async def _ask_hook(self, effect: AskHook, key: str, turn: int) -> None:
        """The PreToolUse/UserPromptSubmit hooks as an activity; a lost one blocks."""
        request = self._hook_request(effect)

        def lost(exc: ActivityError) -> list[Event]:
            reason = f"hook activity failed: {cause(exc)}"
            return [HookDecided(hook_id=effect.hook_id, decision=Blocked(reason=reason))]

        options = self._options(key, timedelta(seconds=60), ATTEMPTS)
        await self._answered(
            turn,
            lambda: workflow.execute_activity(
                ASK_HOOK, request, result_type=dict[str, Any], **options
            ),
            lambda data: [_event(data)],
            lost,
        )

    async def _tell_hook(self, effect: TellHook, key: str) -> None:
        """The PostToolUse hooks as an activity; nothing answers it, and a failure is logged."""
        options = self._options(key, timedelta(seconds=60), ATTEMPTS)
        try:
            await workflow.execute_activity(TELL_HOOK, self._hook_request(effect), **options)
        except ActivityError as exc:
            workflow.logger.warning("PostToolUse hooks failed: %s", cause(exc))

    def _hook_request(self, effect: AskHook | TellHook) -> HookRequest:
        """A hook effect and the history its hook is shown."""
        assert self._state is not None
        data: list[dict[str, Any]] = unstructure(self._state.history)
        return HookRequest(effect=effect_data(effect), history=data, agent=self._start.agent)

    async def _timer(self, effect: StartTimer, turn: int) -> None:
        """A durable timer; then `TimerFired`."""
        await workflow.sleep(effect.seconds)
        self._post(turn, [TimerFired(token=effect.token)])


def _event(data: dict[str, Any]) -> Event:
    """An activity's event back from JSON data."""
    return event_of(data)
