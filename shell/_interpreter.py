"""The skeleton every effect interpreter shares: one event at a time, a model stream, an inbox.

A reducer's interpreter feeds it events one at a time, in the order they
happen; a cancel (an interrupt, an abort) never splits the carrying out of one
step's effects: the few places that wait inside a step are shielded. Model
events are fed as the model port streams them; everything else that happens
in the background (tool outcomes, hook decisions, timers, the caller's results
or cancel) arrives through the inbox. `Runner` (the tool
loop) and `AgentRunner` (structured-output agents) build on this.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

import anyio
import anyio.abc

from toolreel.adapters import ModelPort
from toolreel.core import CallModel, ModelCallFailed, ModelResponded, StepError, TimerFired

E = TypeVar("E")

STREAM_ENDED = "model stream ended without a complete response"


class Interpreter(Generic[E]):
    """Feeds a reducer; subclasses say how to apply an event and when the run is over."""

    #: Exceptions from the model port that are bugs to raise, not model failures to feed
    #: (a reducer refusing an event: misuse, never the model's doing).
    bugs: tuple[type[BaseException], ...] = (StepError,)

    def __init__(self, model: ModelPort) -> None:
        """No model call under way, nothing in the inbox."""
        self.model = model
        self.callback_errors: list[str] = []
        self._send, self._inbox = anyio.create_memory_object_stream[tuple[Any, anyio.Event | None]](
            math.inf
        )
        self._call: CallModel | None = None
        self._model_scope: anyio.CancelScope | None = None
        self._tasks: anyio.abc.TaskGroup | None = None

    async def feed(self, event: E) -> None:
        """Apply one event and carry out its effects (subclasses)."""
        raise NotImplementedError

    def finished(self) -> bool:
        """Whether the run (or turn) is over (subclasses)."""
        raise NotImplementedError

    async def before_call(self, call: CallModel) -> bool:
        """Whether to make `call` now (an aborted agent feeds a cancel instead)."""
        return True

    async def stream_cancelled(self) -> None:
        """What a cancelled model stream means (nothing: the canceller posts its event)."""

    def post(self, event: E) -> None:
        """Hand the interpreter an event from the background."""
        self._send.send_nowait((event, None))

    async def submit(self, event: E) -> None:
        """Hand the interpreter an event and wait until it has been applied."""
        done = anyio.Event()
        self._send.send_nowait((event, done))
        await done.wait()

    def drain(self) -> None:
        """Drop what the inbox still holds from a run that is over (a late interrupt, say)."""
        while True:
            try:
                _, done = self._inbox.receive_nowait()
            except anyio.WouldBlock:
                return
            if done is not None:
                done.set()

    def cut_stream(self) -> None:
        """Stop the model stream under way, if any."""
        if self._model_scope is not None:
            self._model_scope.cancel()

    async def loop(self) -> None:
        """Make model calls and take events from the inbox until the run is over."""
        while not self.finished():
            if self._call is not None:
                call, self._call = self._call, None
                if await self.before_call(call):
                    await self._stream(call)
            else:
                event, done = await self._inbox.receive()
                await self.feed(event)
                if done is not None:
                    done.set()

    async def _stream(self, call: CallModel) -> None:
        """Feed the model's events for `call`; a failing or cut-short stream is a failure.

        Only what the model port raises is the model's failure: what feeding
        an event raises (a journal that gave up, a bug) propagates. The
        stream is closed when the call is over, cut or cancelled.
        """
        ended = False
        with anyio.CancelScope() as scope:
            self._model_scope = scope
            events = self.model.stream(call.request)
            try:
                while not ended:
                    try:
                        event = await anext(events)
                    except StopAsyncIteration:
                        break
                    except self.bugs:
                        raise
                    except Exception as exc:
                        failure = f"model client raised {type(exc).__name__}: {exc}"
                        event = ModelCallFailed(retryable=False, message=failure)
                    await self.feed(event)  # type: ignore[arg-type]
                    ended = isinstance(event, ModelResponded | ModelCallFailed) or self.finished()
            finally:
                await _close(events)
        self._model_scope = None
        if ended:
            return
        if scope.cancelled_caught:
            await self.stream_cancelled()
        else:
            await self.feed(ModelCallFailed(retryable=True, message=STREAM_ENDED))  # type: ignore[arg-type]

    def spawn(self, work: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        """Start background work in the run's task group."""
        assert self._tasks is not None
        self._tasks.start_soon(work, *args)

    async def timer(self, token: str, seconds: float) -> None:
        """Sleep, then say so."""
        await anyio.sleep(seconds)
        self.post(TimerFired(token=token))  # type: ignore[arg-type]

    async def guarded(self, callback: Callable[..., Any] | None, *args: Any) -> None:
        """Call a callback; record what it raised instead of raising."""
        if callback is None:
            return
        try:
            result = callback(*args)
            if inspect.isawaitable(result):
                with anyio.CancelScope(shield=True):  # a cancel never splits a step
                    await result
        except Exception as exc:
            name = getattr(callback, "__qualname__", repr(callback))
            self.callback_errors.append(f"{name} raised {type(exc).__name__}: {exc}")


async def _close(events: Any) -> None:
    """Close a model stream now (its HTTP response with it), even while being cancelled."""
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):
            await aclose()


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
