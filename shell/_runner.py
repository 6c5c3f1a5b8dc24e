"""The effect interpreter: folds events through `step` and carries out each effect.

One runner drives one session. Events are fed to `step` one at a time, in the
order they happen; the effects are carried out as the core says:

- `CallModel`: the model port streams events, each fed back as it arrives.
- `RunTool`: every call of a round runs at once in the runner's task group
  (sync tools in worker threads), each with its timeout; the outcome comes
  back as `ToolFinished` — an exception or a timeout as an error result.
- `AskHook`: the caller's hooks; PreToolUse/UserPromptSubmit answer with
  `HookDecided`, PostToolUse is told only.
- `StartTimer`: sleep, then `TimerFired`. `Emit`: the caller's sink and the
  observer callbacks. `Persist`/every step: the journal. `Finish`: the turn ends.

Durability: steps are journaled in batches, and always before a tool runs
(so a started call is on disk before it has any effect), after each tool
outcome, before each model call, and at the end of a turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import attrs
from returns.result import Failure

from toolreel.adapters import Journal, MemoryJournal, Step
from toolreel.adapters._providers import ModelPort
from toolreel.adapters._redact import Redactor
from toolreel.adapters._session import with_configs
from toolreel.core import (
    AskHook,
    CallModel,
    Cancelled,
    ChatMessage,
    Effect,
    Emit,
    Event,
    Finish,
    HookDecided,
    HookPoint,
    LoopConfig,
    ModelCallFailed,
    ModelResponded,
    Notice,
    Persist,
    Phase,
    RoundFinished,
    RunTool,
    StartTimer,
    State,
    TimerFired,
    ToolCall,
    ToolCallAnnounced,
    ToolFinished,
    ToolResultReady,
    initial_state,
    step,
)

from ._hooks import (
    Hook,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
    decide,
)
from ._interpreter import Interpreter, unwrap
from ._tools import Tool, call_arguments

Sink = Callable[[Notice | Finish], None]
INTERRUPTED = "interrupted; outcome unknown"


@attrs.define
class Observers:
    """Callbacks that watch a run; one that raises is recorded and never breaks it."""

    on_tool_call: Callable[..., Any] | None = None
    on_tool_result: Callable[..., Any] | None = None
    on_round: Callable[..., Any] | None = None
    on_finish: Callable[..., Any] | None = None


@attrs.define
class RunMetadata:
    """What went wrong around a run without stopping it (callbacks, PostToolUse hooks)."""

    callback_errors: list[str] = attrs.Factory(list)


class Runner(Interpreter[Event]):
    """Interprets one session's effects (see the module docstring)."""

    def __init__(
        self,
        *,
        config: LoopConfig,
        model: ModelPort,
        tools: Mapping[str, Tool],
        hooks: Mapping[HookPoint, tuple[Hook, ...]],
        journal: Journal,
        session_id: str,
        redactor: Redactor | None = None,
        tool_timeout: float = 60.0,
        max_concurrent_tools: int | None = None,
        observers: Observers | None = None,
    ) -> None:
        """A runner at the start of a new session."""
        super().__init__(model)
        self.config = config
        self.tools = dict(tools)
        self.hooks = dict(hooks)
        self.journal = journal
        self.session_id = session_id
        self.redactor = redactor or getattr(model, "redactor", None) or Redactor()
        self.tool_timeout = tool_timeout
        self.observers = observers or Observers()
        self.metadata = RunMetadata(callback_errors=self.callback_errors)
        self.state: State = initial_state(config)
        self.seq = 0
        self.sink: Sink | None = None
        self._limiter = (
            anyio.CapacityLimiter(max_concurrent_tools) if max_concurrent_tools else None
        )
        self._unsaved: list[Step] = []
        self._finish: Finish | None = None
        self._runs: list[ToolCall] = []
        self._interrupted = False

    def finished(self) -> bool:
        """Whether the turn has finished."""
        return self._finish is not None

    @property
    def finish(self) -> Finish | None:
        """How the last turn finished (a turn cancelled from outside included), if it has."""
        return self._finish

    # --- running a turn -------------------------------------------------------

    async def run(self, first: Event | None = None) -> Finish:
        """Feed `first` (if any) and carry on until the turn finishes."""

        async def begin() -> bool:
            if first is not None:
                await self.feed(first)
            return True

        finish = await self._drive(begin)
        assert finish is not None
        return finish

    async def _drive(self, begin: Callable[[], Awaitable[bool]]) -> Finish | None:
        """Run a turn in a task group of its own: `begin`, then the loop unless `begin` says no.

        Whatever stops it from outside — a cancel scope, `task.cancel()`, a
        real Ctrl-C, a journal that gives up — the turn is recorded as
        cancelled (under a shield) and that very exception propagates, never
        wrapped in an exception group.
        """
        self._finish = None
        error: BaseException | None = None
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                if await begin():
                    await self.loop()
                tasks.cancel_scope.cancel()
        except BaseException as exc:
            error = unwrap(exc)
        finally:
            self._tasks = None
            self._interrupted = False
        if error is None:
            return self._finish
        with anyio.CancelScope(shield=True):
            await self._abandon(quiet=not isinstance(error, anyio.get_cancelled_exc_class()))
        raise error

    async def _abandon(self, *, quiet: bool) -> None:
        """The turn was stopped from outside: record a cancel so the history stays valid.

        `quiet` (another error is on its way to the caller): a journal that
        fails again, or a state that takes no cancel, adds nothing to it.
        """
        try:
            if self._finish is None and self.state.phase is not Phase.IDLE:
                await self.feed(Cancelled())
            await self._save()
        except Exception:
            if not quiet:
                raise

    def interrupt(self) -> None:
        """Stop the model stream and the tools now; the turn finishes as cancelled.

        Said before the turn's task has begun, it still holds: no model call
        is made, and the loop takes the cancel from the inbox.
        """
        self._interrupted = True
        self.post(Cancelled())
        self.cut_stream()

    async def before_call(self, call: CallModel) -> bool:
        """No model call once interrupted (the cancel waits in the inbox)."""
        return not self._interrupted

    def drain(self) -> None:
        """Forget a late interrupt of a turn that is over (before the next one starts)."""
        super().drain()
        self._interrupted = False

    async def feed(self, event: Event) -> None:
        """Apply one event and carry out its effects."""
        event = self.redactor.event(event)  # no key is ever stored, shown or sent on
        self.state, effects = step(self.state, event)
        self.seq += 1
        self._unsaved.append(Step(seq=self.seq, event=event, effects=effects))
        for effect in effects:
            await self._dispatch(effect)
        if self._runs:
            await self._save()  # a tool call is on disk before it starts
            runs, self._runs = self._runs, []
            for call in runs:
                self.spawn(self._run_tool, call)
        elif isinstance(event, ToolFinished) or self._call is not None or self._finish:
            await self._save()

    async def _dispatch(self, effect: Effect) -> None:
        """Carry out one effect (the slow ones in tasks)."""
        match effect:
            case CallModel():
                self._call = effect
            case RunTool(call=call):
                self._runs.append(call)
            case AskHook():
                self.spawn(self._ask_hook, effect)
            case StartTimer(token=token, seconds=seconds):
                self.spawn(self.timer, token, seconds)
            case Emit(notice=notice):
                await self._notify(notice)
            case Persist():
                pass  # the step, Persist included, is journaled
            case Finish():
                self._finish = effect
                await self.guarded(self.observers.on_finish, effect)
                if self.sink is not None:
                    self.sink(effect)

    # --- the effects --------------------------------------------------------------

    async def _run_tool(self, call: ToolCall) -> None:
        """Run one tool call with its timeout; its outcome goes to the inbox."""
        tool = self.tools[call.name]
        timeout = tool.timeout if tool.timeout is not None else self.tool_timeout
        if self._limiter is not None:
            async with self._limiter:
                event = await self._timed_run(tool, call, timeout)
        else:
            event = await self._timed_run(tool, call, timeout)
        self.post(event)

    async def _timed_run(self, tool: Tool, call: ToolCall, timeout: float) -> ToolFinished:
        """The tool's result, or a timeout error after `timeout` seconds."""
        with anyio.move_on_after(timeout):
            result = await tool.run(call.arguments)
            if isinstance(result, Failure):
                return ToolFinished(call_id=call.id, output=result.failure(), is_error=True)
            return ToolFinished(call_id=call.id, output=result.unwrap())
        message = f"Tool {call.name} timed out after {timeout:g} s"
        return ToolFinished(call_id=call.id, output=message, is_error=True)

    async def _ask_hook(self, ask: AskHook) -> None:
        """Run the hooks of one point; answer the core unless it is PostToolUse."""
        hooks = self.hooks.get(ask.point, ())
        history = self.state.history
        if ask.point is HookPoint.POST_TOOL_USE:
            assert ask.call is not None and ask.result is not None
            event = PostToolUseEvent(
                tool_name=ask.call.name,
                tool_input=call_arguments(ask.call),
                tool_result=ask.result.content,
                tool_use_id=ask.call.id,
                is_error=ask.result.is_error,
                history=history,
            )
            for hook in hooks:
                await self.guarded(hook, event)
            return
        if ask.point is HookPoint.PRE_TOOL_USE:
            assert ask.call is not None
            asked: PreToolUseEvent | UserPromptSubmitEvent = PreToolUseEvent(
                tool_name=ask.call.name,
                tool_input=call_arguments(ask.call),
                tool_use_id=ask.call.id,
                history=history,
            )
        else:
            asked = UserPromptSubmitEvent(prompt=ask.prompt or "", history=history)
        self.post(HookDecided(hook_id=ask.hook_id, decision=await decide(hooks, asked)))

    async def _notify(self, notice: Notice) -> None:
        """Tell the sink and the observers."""
        if self.sink is not None:
            self.sink(notice)
        match notice:
            case ToolCallAnnounced(call=call):
                await self.guarded(self.observers.on_tool_call, call)
            case ToolResultReady(result=result):
                await self.guarded(self.observers.on_tool_result, result)
            case RoundFinished(round=tool_round):
                await self.guarded(self.observers.on_round, tool_round)
            case _:
                pass

    async def _save(self) -> None:
        """Make the unsaved steps durable."""
        if not self._unsaved:
            return
        steps, self._unsaved = self._unsaved, []
        if isinstance(self.journal, MemoryJournal):
            self.journal.append(self.session_id, steps)
            return
        with anyio.CancelScope(shield=True):  # a cancel never loses journaled steps
            await anyio.to_thread.run_sync(self.journal.append, self.session_id, steps)

    # --- resuming -------------------------------------------------------------------

    def restore(self) -> list[Effect]:
        """Rebuild the state from the journal; the effects still owed when it stopped.

        The journal is never written in the middle of a model stream, so an
        interrupted call left no partial response and is simply made again.
        """
        owed: dict[str, Effect] = {}
        configs = self.journal.configs(self.session_id)
        self.state = initial_state(configs[0][1])
        for entry, change in with_configs(self.journal.entries(self.session_id), configs):
            if change is not None:
                self.state = attrs.evolve(self.state, config=change)
            self.state, effects = step(self.state, entry.event)
            self.seq = entry.seq
            _settle(owed, entry.event)
            for effect in effects:
                _owe(owed, effect)
        self.state = attrs.evolve(self.state, config=self.config)  # go on under today's config
        if self.state.phase is Phase.IDLE:
            return []
        return list(owed.values())

    async def resume(self, owed: list[Effect]) -> Finish | None:
        """Carry out what was owed at the crash and finish the interrupted turn, if any."""
        if self.state.phase is Phase.IDLE:
            return None

        async def begin() -> bool:
            for effect in owed:
                await self._redo(effect)
            if self._runs:
                runs, self._runs = self._runs, []
                for call in runs:
                    self.spawn(self._run_tool, call)
            return self.state.phase is not Phase.AWAITING_RESULTS

        return await self._drive(begin)

    async def _redo(self, effect: Effect) -> None:
        """Carry out an owed effect; a started tool without outcome reruns only if idempotent."""
        if isinstance(effect, RunTool):
            tool = self.tools.get(effect.call.name)
            if tool is not None and tool.idempotent:
                self._runs.append(effect.call)
            else:
                self.post(ToolFinished(call_id=effect.call.id, output=INTERRUPTED, is_error=True))
            return
        await self._dispatch(effect)


def _owe(owed: dict[str, Effect], effect: Effect) -> None:
    """Note an effect that expects an answering event."""
    match effect:
        case CallModel():
            owed["model"] = effect
        case RunTool(call=call):
            owed[f"tool:{call.id}"] = effect
        case AskHook(point=point, hook_id=hook_id) if point is not HookPoint.POST_TOOL_USE:
            owed[f"hook:{hook_id}"] = effect
        case StartTimer(token=token):
            owed[f"timer:{token}"] = effect
        case _:
            pass


def _settle(owed: dict[str, Effect], event: Event) -> None:
    """Strike what `event` answers."""
    match event:
        case ModelResponded() | ModelCallFailed():
            owed.pop("model", None)
        case ToolFinished(call_id=call_id):
            owed.pop(f"tool:{call_id}", None)
        case HookDecided(hook_id=hook_id):
            owed.pop(f"hook:{hook_id}", None)
        case TimerFired(token=token):
            owed.pop(f"timer:{token}", None)
        case _:
            pass


def in_progress(state: State) -> tuple[ChatMessage, ...]:
    """The history with the running turn's rounds so far as an assistant message."""
    turn = state.turn
    if turn is None or not turn.rounds:
        return state.history
    return (*state.history, ChatMessage(role="assistant", content="", tool_rounds=turn.rounds))
