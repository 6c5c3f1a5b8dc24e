"""The Driver: runs a reducer one event at a time, with a model stream, an inbox and timers.

A driver is built by composition from a `reduce` function,
`(state, event) -> (state, effects)`, and an `EffectHandler` that carries out
each effect. It feeds the reducer events one at a time, in the order they
happen; a cancel (an interrupt, an abort, a cancel from outside) never splits
the carrying out of one step's effects. Model events are fed as the model port
streams them; everything else that happens in the background (tool outcomes,
hook decisions, timers, the caller's results or cancel) arrives through the
inbox. The handler asks the driver for what only the driver does: make a model
call, start a timer, spawn background work, end the run.

A run that is stopped from outside (a cancel scope, `task.cancel()`, a real
Ctrl-C, a journal that gives up) is recorded as `Cancelled` under a shield, and
that very exception propagates, never wrapped in an exception group.

Nobody waits on a run that is over: `submit` returns once its event is
applied, raises what applying it raised (a journal that gave up), and raises
`UsageError` if the run ended before taking it.

The driver owns a run's lifecycle: `run(first)` feeds the first event, carries
on until the handler says the run is over (`end(outcome)`), and returns that
outcome (a `Finish`, or an `AwaitApproval` pause). Telemetry observes it: each
run gets a fresh watcher from `observe` (shell/_telemetry.py), told of every
model call as it starts and ends and of the run's end. A prompt reaches the
reducer through the task that runs the turn, `run`, `feed` and `reduce`: no
other frame between (issue 22).
`Runner` (shell/_runner.py) is its handler, for a chat session and an agent run alike.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, TypeVar, TypeVarTuple

import anyio
from returns.result import Failure, Result, Success

from toolreel.adapters import ModelPort
from toolreel.adapters.redaction import Redactor, held_back
from toolreel.core import (
    AwaitApproval,
    CallModel,
    Cancelled,
    Finish,
    ModelCallFailed,
    ModelEvent,
    ModelResponded,
    StepError,
    TimerFired,
    ToolCall,
    ToolFinished,
    ToolTimedOut,
    UsageError,
)

from ._errors import ReplayError
from ._images import ToolOutput
from ._telemetry import NO_TURN, Turn

if TYPE_CHECKING:
    import anyio.abc

S = TypeVar("S")
E = TypeVar("E")
F = TypeVar("F")
F_contra = TypeVar("F_contra", contravariant=True)
Args = TypeVarTuple("Args")

#: How a run ended: the handler's word (`end`), or None (it ended without one).
RunEnd: TypeAlias = Finish | AwaitApproval | None

#: The events a driver makes itself: the model's, a timer's, and the cancel of a stopped run.
#: A reducer driven by it must take them (its `reduce` accepts `E | DriverEvent`).
DriverEvent: TypeAlias = ModelEvent | TimerFired | Cancelled

STREAM_ENDED = "model stream ended without a complete response"


class EffectHandler(Protocol[F_contra]):
    """Carries out the effects of one reducer (the slow ones in tasks it asks the driver for)."""

    async def carry_out(self, effect: F_contra) -> None:
        """Carry out one effect, in the order the reducer issued it."""


class Driver(Generic[S, E, F]):
    """Feeds `reduce` events in order and hands every effect to `handler` (module docstring)."""

    #: Exceptions from the model port that are raised to the caller, not model failures to
    #: feed: a reducer refusing an event (misuse, never the model's doing) and a recording
    #: that cannot answer (`Recording`'s `RequestMismatch`: the program changed), a port
    #: refusing how it is used (a test model that cannot answer a tool's schema).
    bugs: tuple[type[BaseException], ...] = (StepError, ReplayError, UsageError)
    #: The watcher of the run under way (or the last one): told when each model call
    #: starts and ends, and when the run is over (shell/_telemetry.py).
    watch: Turn = NO_TURN

    def __init__(
        self,
        *,
        model: ModelPort,
        reduce: Callable[[S, E | DriverEvent], tuple[S, Sequence[F]]],
        handler: EffectHandler[F],
        state: S,
        settled: Callable[[S], bool] | None = None,
        abort: anyio.Event | None = None,
        redactor: Redactor | None = None,
        observe: Callable[[], Turn] | None = None,
        fallbacks: Sequence[ModelPort] = (),
    ) -> None:
        """A driver at `state`, no run under way.

        `fallbacks` answer the calls a fallback makes (`CallModel.model` 1, 2, ...:
        core/_fallback.py); `model` answers the others.

        `settled(state)` says a state has no run under way, so a stop from
        outside has nothing to record (default: never). `abort`, once set,
        cuts the model call in flight and is checked before every model call:
        the run is fed `Cancelled` instead. With a `redactor` that knows
        secrets, model streams pass through `held_back` (adapters/_held.py), so a
        key split across stream pieces is masked too. `observe()` makes each
        run's watcher (default: none watches).
        """
        self.model = model
        self.fallbacks = tuple(fallbacks)
        self._observe = observe
        #: How the run under way (or the last one) ended: the handler's `end(outcome)`.
        self.outcome: RunEnd = None
        self._redactor = redactor if redactor is not None and redactor.secrets else None
        self.state = state
        self._reduce = reduce
        self._handler = handler
        self._settled = settled or _never
        self._abort = abort
        self._send, self._inbox = anyio.create_memory_object_stream[
            tuple[E | DriverEvent, Receipt | None]
        ](math.inf)
        self._applying: Receipt | None = None  # the submitted event being applied
        self._call: CallModel | None = None
        self._model_scope: anyio.CancelScope | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._ended = False
        self._interrupted = False

    # --- what a handler asks for while carrying out an effect ---------------------

    def call_model(self, call: CallModel) -> None:
        """Make `call` once the step's effects are carried out."""
        self._call = call

    def start_timer(self, token: str, seconds: float) -> None:
        """Feed `TimerFired(token)` after `seconds`."""
        self.spawn(self.timer, token, seconds)

    def spawn(self, work: Callable[[*Args], Coroutine[Any, Any, None]], *args: *Args) -> None:
        """Start background work in the run's task group (it ends with the run)."""
        assert self._tasks is not None, "background work belongs to a run"
        self._tasks.start_soon(work, *args)

    def end(self, outcome: RunEnd = None) -> None:
        """The run is over: take no more events (the handler carried out its last effect);
        `run` returns `outcome`."""
        self._ended = True
        self.outcome = outcome

    def reopen(self) -> None:
        """The run is not over after all: a pause another event of the same step undid."""
        self._ended = False
        self.outcome = None

    @property
    def ended(self) -> bool:
        """Whether the run under way (or the last one) is over."""
        return self._ended

    # --- what the outside hands in ------------------------------------------------

    def post(self, event: E | DriverEvent) -> None:
        """Hand the driver an event from the background."""
        self._send.send_nowait((event, None))

    async def submit(self, event: E | DriverEvent) -> None:
        """Hand the driver an event and wait until it has been applied.

        Raises what applying it raised, or `UsageError` if the run ended without taking it.
        """
        receipt = Receipt()
        self._send.send_nowait((event, receipt))
        await receipt.done.wait()
        if receipt.error is not None:
            raise receipt.error

    def interrupt(self) -> None:
        """Stop now: cut the model stream, make no model call, and feed `Cancelled` in turn.

        Said before the run has begun, it still holds: no model call is made
        until `drain()`, and the loop takes the cancel from the inbox.
        """
        self._interrupted = True
        self.post(Cancelled())
        self.cut_stream()

    def drain(self) -> None:
        """Forget what came too late for a run that is over (a late interrupt, a late result)."""
        self._interrupted = False
        while True:
            try:
                event, receipt = self._inbox.receive_nowait()
            except anyio.WouldBlock:
                return
            if receipt is not None:
                receipt.settle(not_applied(event, None))

    def cut_stream(self) -> None:
        """Stop the model stream under way, if any."""
        if self._model_scope is not None:
            self._model_scope.cancel()

    # --- running ------------------------------------------------------------------

    async def feed(self, event: E | DriverEvent) -> None:
        """Apply one event and carry out its effects in order."""
        self.state, effects = self._reduce(self.state, event)
        for effect in effects:
            await self._handler.carry_out(effect)

    async def run(
        self, first: E | None = None, *, begin: Callable[[], Awaitable[bool]] | None = None
    ) -> RunEnd:
        """Run a turn in a task group of its own, watched: feed `first` (if any), or
        await `begin()` (no loop if it says no); then the loop, until the run is over.

        Returns how it ended (`end`'s outcome). Whatever stops it from outside,
        the run is recorded as cancelled (under a shield) and that very
        exception propagates, never wrapped; the watcher is told either way.
        """
        self._ended = False
        self._call = None  # a call a stopped run never made is not this run's
        self.outcome = None
        watch = self.watch = NO_TURN if self._observe is None else self._observe()
        error: BaseException | None = None
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                if self._abort is not None:
                    tasks.start_soon(self._watch_abort, self._abort)
                if first is not None:
                    await self.feed(first)
                if begin is None or await begin():
                    await self._loop()
                tasks.cancel_scope.cancel()
        except BaseException as exc:
            error = unwrap(exc)
        finally:
            self._tasks = None
            self._interrupted = False
            self._refuse_waiting(error)
        if error is not None:
            error = await self._stopped(error)
        watch.ended(self.outcome if isinstance(self.outcome, Finish) else None, error)
        if error is not None:
            raise error
        return self.outcome

    async def _stopped(self, error: BaseException) -> BaseException:
        """Record the stop of a run (under a shield); the error to raise: `error`, or what
        recording a cancel from outside raised."""
        try:
            with anyio.CancelScope(shield=True):
                await self._record_stop(
                    quiet=not isinstance(error, anyio.get_cancelled_exc_class())
                )
        except BaseException as exc:
            return exc
        return error

    def _refuse_waiting(self, error: BaseException | None) -> None:
        """The run is over: a submitted event it did not apply makes its `submit` raise (the
        run's error if applying it failed); posted ones wait in the inbox as before."""
        applying, self._applying = self._applying, None
        if applying is not None:
            applying.settle(error if _raisable(error) else UsageError(STOPPED))
        kept = []
        while True:
            try:
                item = self._inbox.receive_nowait()
            except anyio.WouldBlock:
                break
            event, receipt = item
            if receipt is None:
                kept.append(item)
            else:
                receipt.settle(not_applied(event, error))
        for item in kept:
            self._send.send_nowait(item)

    async def _record_stop(self, *, quiet: bool) -> None:
        """The run was stopped from outside: feed a cancel so the history stays valid.

        `quiet` (another error is on its way to the caller): a failure to
        record it (a journal that fails again) adds nothing to that error.
        """
        if self._ended or self._settled(self.state):
            return
        try:
            await self.feed(Cancelled())
        except Exception:
            if not quiet:
                raise

    async def _loop(self) -> None:
        """Make model calls and take events from the inbox until the run is over."""
        while not self._ended:
            if self._call is not None:
                call, self._call = self._call, None
                if await self._may_call():
                    await self._stream(call)
            else:
                event, receipt = await self._inbox.receive()
                self._applying = receipt
                await self.feed(event)
                self._applying = None
                if receipt is not None:
                    receipt.settle(None)

    async def _may_call(self) -> bool:
        """No model call once interrupted (the cancel waits in the inbox) or aborted (fed now)."""
        if self._interrupted:
            return False
        if self._aborted():
            await self.feed(Cancelled())
            return False
        return True

    def _aborted(self) -> bool:
        """Whether the caller's abort is set."""
        return self._abort is not None and self._abort.is_set()

    async def _watch_abort(self, abort: anyio.Event) -> None:
        """Cut a model call in flight once the caller aborts (the loop then feeds `Cancelled`)."""
        await abort.wait()
        self.cut_stream()

    async def _stream(self, call: CallModel) -> None:
        """Feed the model's events for `call`; a failing or cut-short stream is a failure.

        Only what the model port raises is the model's failure: what feeding
        an event raises (a journal that gave up, a bug) propagates. The
        stream is closed when the call is over, cut or cancelled. The watcher
        is told as the call starts and ends (even if it raises), with its last
        event (None: it was cut short or the run ended).
        """
        watch = self.watch
        watch.model_started(call)
        over = False
        try:
            with anyio.CancelScope() as scope:
                self._model_scope = scope
                events = self._events(call)
                try:
                    while not over:
                        try:
                            event: ModelEvent = await anext(events)
                        except StopAsyncIteration:
                            break
                        except self.bugs:
                            raise
                        except Exception as exc:
                            failure = f"model client raised {type(exc).__name__}: {exc}"
                            event = ModelCallFailed(retryable=False, message=failure)
                        await self.feed(event)
                        over = isinstance(event, ModelResponded | ModelCallFailed) or self._ended
                finally:
                    await _close(events)
            self._model_scope = None
            ended = _last(event) if over else await self._cut_short(scope)
        except BaseException as exc:
            watch.model_ended(call, exc)
            raise
        watch.model_ended(call, ended)

    def _events(self, call: CallModel) -> AsyncIterator[ModelEvent]:
        """The model port's events for `call` (held back where a key could be split)."""
        port = self.model if call.model == 0 else self._fallback(call.model)
        events = port.stream(call.request)
        if self._redactor is not None:
            return held_back(events, self._redactor)
        return events

    def _fallback(self, index: int) -> ModelPort:
        """The port of fallback model `index` (a config and ports that disagree: misuse)."""
        if not 0 < index <= len(self.fallbacks):
            raise UsageError(
                f"the loop asked fallback model {index}, but the session has "
                f"{len(self.fallbacks)} fallback connection(s)"
            )
        return self.fallbacks[index - 1]

    async def _cut_short(self, scope: anyio.CancelScope) -> ModelCallFailed | None:
        """A stream that ended early is a retryable failure; one cut short by an abort, a
        cancel (an interrupt posted its own). The failure fed, if any."""
        if not scope.cancelled_caught:
            ended = ModelCallFailed(retryable=True, message=STREAM_ENDED)
            await self.feed(ended)
            return ended
        if self._aborted():
            await self.feed(Cancelled())
        return None

    async def timer(self, token: str, seconds: float) -> None:
        """Sleep, then say so."""
        await anyio.sleep(seconds)
        self.post(TimerFired(token=token))


#: What `submit` raises for an event whose run stopped while applying it (a cancel).
STOPPED = "the run was stopped while applying the event"


class Receipt:
    """How a submitted event fared: `done` once applied (or not), with what stopped it."""

    def __init__(self) -> None:
        """Not applied yet."""
        self.done = anyio.Event()
        self.error: BaseException | None = None

    def settle(self, error: BaseException | None) -> None:
        """Applied (`error` None), or not because of `error`; the first word counts."""
        if not self.done.is_set():
            self.error = error
            self.done.set()


def not_applied(event: object, error: BaseException | None) -> BaseException:
    """What `submit` raises for an event the run never took: the run's error, else misuse."""
    if _raisable(error):
        assert error is not None
        return error
    return UsageError(f"the run ended before {type(event).__name__} was applied")


def _raisable(error: BaseException | None) -> bool:
    """Whether an error that stopped a run may be raised in another task (not a cancel)."""
    return error is not None and not isinstance(error, anyio.get_cancelled_exc_class())


def _last(event: ModelEvent) -> ModelResponded | ModelCallFailed | None:
    """A call's last event, if it ended the call (None: the run ended before)."""
    return event if isinstance(event, ModelResponded | ModelCallFailed) else None


def _never(state: object) -> bool:
    """No state is settled: a stop is always recorded."""
    return False


async def _close(events: AsyncIterator[ModelEvent]) -> None:
    """Close a model stream now (its HTTP response with it), even while being cancelled."""
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):
            await aclose()


async def run_call(
    call: ToolCall, work: Callable[[str], Awaitable[Result[str | ToolOutput, str]]], timeout: float
) -> ToolFinished | ToolTimedOut:
    """`work` on the call's arguments as `ToolFinished`; past `timeout` s, `ToolTimedOut`
    (the core words what the model reads of it)."""
    with anyio.move_on_after(timeout):
        match await work(call.arguments):
            case Success(ToolOutput(text=text, images=images)):
                return ToolFinished(call_id=call.id, output=text, images=images)
            case Success(text):
                return ToolFinished(call_id=call.id, output=text)
            case Failure(problem):
                return ToolFinished(call_id=call.id, output=problem, is_error=True)
    return ToolTimedOut(call_id=call.id, seconds=timeout)


async def run_within(
    limiter: anyio.CapacityLimiter | None,
    call: ToolCall,
    work: Callable[[str], Awaitable[Result[str | ToolOutput, str]]],
    timeout: float,
) -> ToolFinished | ToolTimedOut:
    """`run_call` holding a place of `limiter` (None: no limit on concurrent tools)."""
    if limiter is None:
        return await run_call(call, work, timeout)
    async with limiter:
        return await run_call(call, work, timeout)


def limiter_for(max_concurrent_tools: int | None) -> anyio.CapacityLimiter | None:
    """The limiter of `max_concurrent_tools` (None or 0: no limit)."""
    return anyio.CapacityLimiter(max_concurrent_tools) if max_concurrent_tools else None


async def guarded(
    errors: list[str],
    callback: Callable[..., Any] | None,
    *args: Any,
    redact: Callable[[str], str] = str,
) -> None:
    """Call a callback (sync or async); record what it raised in `errors` (redacted), not raise."""
    if callback is None:
        return
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            with anyio.CancelScope(shield=True):  # a cancel never splits a step
                await result
    except (Exception, SystemExit) as exc:  # sys.exit in a callback too
        name = getattr(callback, "__qualname__", repr(callback))
        errors.append(redact(f"{name} raised {type(exc).__name__}: {exc}"))


def unwrap(exc: BaseException) -> BaseException:
    """The one exception an anyio task group wrapped in a group (the first, if it wrapped more).

    Cancellation is passed over when something else is in the group, so a
    real error (a journal that gave up, a Ctrl-C) is what the caller sees.
    """
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves = [unwrap(inner) for inner in exc.exceptions]
    others = [leaf for leaf in leaves if not isinstance(leaf, anyio.get_cancelled_exc_class())]
    return (others or leaves)[0]
