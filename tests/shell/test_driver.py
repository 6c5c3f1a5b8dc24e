"""The Driver alone, with a trivial reducer and handler: the order it feeds events in, the
model stream (cut, failing, ended early), timers, and a stop from outside recorded under
a shield."""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from toolreel.core import (
    CallModel,
    Cancelled,
    ChatMessage,
    Finish,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    Phase,
    PromptSubmitted,
    StepError,
    TextDelta,
    TimerFired,
    Usage,
    UsageError,
)
from toolreel.core.outcomes import Completed
from toolreel.shell._driver import Driver
from toolreel.shell.engine import STREAM_ENDED

REQUEST = ModelRequest(
    model="m", system=None, messages=(ChatMessage(role="user", content="hi"),), tools=()
)
DONE = ModelResponded(usage=Usage())
FINISH = Finish(outcome=Completed(text="4"), rounds=(), iterations=1, usage=Usage())
BACKENDS = ["asyncio"] + (["trio"] if importlib.util.find_spec("trio") else [])


class DiskFull(OSError):
    """A journal that gave up."""


def reduce(log: tuple[object, ...], event: object) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """Log every event; a prompt's text names its effects, and the run ends on an answer."""
    log = (*log, event)
    match event:
        case PromptSubmitted(text="call"):
            return log, (CallModel(request=REQUEST, iteration=1),)
        case PromptSubmitted(text="timer"):
            return log, ("timer",)
        case PromptSubmitted(text="finish"):
            return log, (FINISH,)
        case PromptSubmitted(text="end") | ModelResponded() | ModelCallFailed() | Cancelled():
            return log, ("end",)
        case TimerFired():
            return log, ("end",)
        case TextDelta(text="interrupt"):
            return log, ("interrupt",)
        case TextDelta(text="stop"):
            return log, ("end",)
        case TextDelta(text="boom"):
            return log, ("boom",)
    return log, ()


class Handler:
    """Carries out the trivial reducer's effects and notes each one it finished."""

    def __init__(self, on_end: Callable[[], Awaitable[None]] | None = None) -> None:
        """`on_end` runs (awaited) when the run ends: a stand-in for a journal save."""
        self.driver: Driver[tuple[object, ...], object, object]
        self.done: list[object] = []
        self.on_end = on_end

    async def carry_out(self, effect: object) -> None:
        """Hand model calls and timers to the driver; end the run when told."""
        match effect:
            case CallModel():
                self.driver.call_model(effect)
            case "timer":
                self.driver.start_timer("t1", 0)
            case "interrupt":
                self.driver.interrupt()
            case "boom":
                raise DiskFull("disk full")
            case "end":
                self.driver.end()
                if self.on_end is not None:
                    await self.on_end()
            case Finish():
                self.driver.end(effect)
        self.done.append(effect)


class Model:
    """A model port whose stream is `script(request)`; it notes requests and closed streams."""

    def __init__(self, script: Callable[[ModelRequest], AsyncIterator[ModelEvent]]) -> None:
        """No request yet."""
        self.script = script
        self.requests: list[ModelRequest] = []
        self.closed = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The scripted events; closing the stream is counted."""
        self.requests.append(request)
        try:
            async for event in self.script(request):
                yield event
        finally:
            self.closed += 1


async def answers(request: ModelRequest) -> AsyncIterator[ModelEvent]:
    """A model that streams a delta, then its response."""
    yield TextDelta(text="4")
    yield DONE


class Watcher:
    """A run's watcher (shell/_telemetry.py's `Turn`) that notes what it is told."""

    def __init__(self) -> None:
        """Told nothing yet."""
        self.told: list[tuple[str, object]] = []

    def model_started(self, call: CallModel) -> None:
        """Noted."""
        self.told.append(("model_started", call.iteration))

    def model_ended(self, call: CallModel, outcome: object) -> None:
        """Noted, with the call's last event (or what it raised)."""
        self.told.append(("model_ended", outcome))

    def ended(self, end: Finish | None, error: BaseException | None) -> None:
        """Noted: how the run ended, and what it raised."""
        self.told.append(("ended", (end, error)))


def driver(
    model: Model | None = None,
    *,
    handler: Handler | None = None,
    settled: Callable[[tuple[object, ...]], bool] | None = None,
    abort: anyio.Event | None = None,
    watchers: list[Watcher] | None = None,
) -> Driver[tuple[object, ...], object, object]:
    """A driver of the trivial reducer with an empty log (each run's watcher kept in `watchers`)."""
    handler = handler or Handler()

    def observe() -> Any:
        watcher = Watcher()
        if watchers is not None:
            watchers.append(watcher)
        return watcher

    handler.driver = Driver(
        model=model or Model(answers),
        reduce=reduce,
        handler=handler,
        state=(),
        settled=settled,
        abort=abort,
        observe=observe,
    )
    return handler.driver


async def run(d: Driver[tuple[object, ...], object, object], event: object) -> None:
    """Run `d`, feeding `event` first."""
    await d.run(event)


def prompts(*texts: str) -> tuple[object, ...]:
    """The prompts with these texts, in order."""
    return tuple(PromptSubmitted(text=text) for text in texts)


# --- a run's lifecycle ---------------------------------------------------------------------


def test_a_run_returns_the_outcome_its_handler_ended_it_with() -> None:
    d = driver()
    assert anyio.run(d.run, PromptSubmitted(text="finish")) == FINISH
    assert d.outcome == FINISH
    assert anyio.run(d.run, PromptSubmitted(text="end")) is None  # ended without one


def test_each_run_has_a_watcher_of_its_own_told_of_each_model_call_and_of_its_end() -> None:
    watchers: list[Watcher] = []
    d = driver(watchers=watchers)
    anyio.run(run, d, PromptSubmitted(text="call"))
    anyio.run(run, d, PromptSubmitted(text="finish"))
    assert [w.told for w in watchers] == [
        [("model_started", 1), ("model_ended", DONE), ("ended", (None, None))],
        [("ended", (FINISH, None))],
    ]


def test_the_watcher_of_a_stopped_run_is_told_what_stopped_it_after_the_cancel_is_fed() -> None:
    async def breaks(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="boom")
        yield DONE  # pragma: no cover

    watchers: list[Watcher] = []
    d = driver(Model(breaks), watchers=watchers)
    with pytest.raises(DiskFull) as stopped:
        anyio.run(run, d, PromptSubmitted(text="call"))
    assert d.state[-1] == Cancelled()
    assert watchers[0].told == [
        ("model_started", 1),
        ("model_ended", stopped.value),
        ("ended", (None, stopped.value)),
    ]


# --- the inbox ------------------------------------------------------------------------


def test_inbox_events_are_fed_one_at_a_time_in_the_order_posted() -> None:
    d = driver()
    for text in ("a", "b", "end", "late"):
        d.post(PromptSubmitted(text=text))
    anyio.run(run, d, PromptSubmitted(text="first"))
    assert d.state == prompts("first", "a", "b", "end")
    d.drain()  # what came too late is forgotten
    d.post(PromptSubmitted(text="end"))
    anyio.run(run, d, PromptSubmitted(text="again"))
    assert d.state[-2:] == prompts("again", "end")


def test_submit_returns_once_its_event_has_been_applied() -> None:
    d = driver()
    seen: list[int] = []

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run, d, PromptSubmitted(text="wait"))
            await d.submit(PromptSubmitted(text="x"))
            seen.append(len(d.state))
            await d.submit(PromptSubmitted(text="end"))

    anyio.run(main)
    assert seen == [2]  # "wait" and "x" were applied when submit returned


def test_submit_raises_what_applying_its_event_raised_and_the_run_stops_with_it() -> None:
    d = driver()
    raised: list[BaseException] = []

    async def main() -> None:
        async def running() -> None:
            with pytest.raises(DiskFull) as stopped:
                await run(d, PromptSubmitted(text="wait"))
            raised.append(stopped.value)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(running)
            with anyio.fail_after(10), pytest.raises(DiskFull, match="disk full") as failed:
                await d.submit(TextDelta(text="boom"))  # its effect fails: a journal gave up
            raised.append(failed.value)

    anyio.run(main)
    assert raised[0] is raised[1] and d.state[-1] == Cancelled()


def test_submit_to_a_run_that_ends_before_taking_its_event_raises_at_once() -> None:
    d = driver()

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            d.post(PromptSubmitted(text="end"))  # the run ends on this one
            tasks.start_soon(run, d, PromptSubmitted(text="first"))
            with anyio.fail_after(10), pytest.raises(UsageError, match="run ended before"):
                await d.submit(PromptSubmitted(text="late"))

    anyio.run(main)
    assert d.state == prompts("first", "end")


def test_a_timer_fires_into_the_inbox() -> None:
    d = driver()
    anyio.run(run, d, PromptSubmitted(text="timer"))
    assert d.state[-1] == TimerFired(token="t1")


# --- the model stream -------------------------------------------------------------------


def test_model_events_are_fed_as_streamed_and_the_stream_is_closed() -> None:
    model = Model(answers)
    d = driver(model)
    anyio.run(run, d, PromptSubmitted(text="call"))
    assert d.state == (PromptSubmitted(text="call"), TextDelta(text="4"), DONE)
    assert model.requests == [REQUEST] and model.closed == 1


def test_a_run_that_ends_mid_stream_reads_no_further() -> None:
    async def chatty(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="stop")
        yield TextDelta(text="more")
        yield DONE

    model = Model(chatty)
    d = driver(model)
    anyio.run(run, d, PromptSubmitted(text="call"))
    assert d.state == (PromptSubmitted(text="call"), TextDelta(text="stop"))
    assert model.closed == 1


def test_a_stream_that_raises_is_fed_as_a_failed_call() -> None:
    async def fails(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="par")
        raise ConnectionResetError("peer went away")

    d = driver(Model(fails))
    anyio.run(run, d, PromptSubmitted(text="call"))
    message = "model client raised ConnectionResetError: peer went away"
    assert d.state[-1] == ModelCallFailed(retryable=False, message=message)


def test_a_stream_that_ends_without_a_response_is_a_retryable_failure() -> None:
    async def stops(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="par")

    d = driver(Model(stops))
    anyio.run(run, d, PromptSubmitted(text="call"))
    assert d.state[-1] == ModelCallFailed(retryable=True, message=STREAM_ENDED)


def test_a_step_error_from_the_model_port_is_a_bug_that_propagates() -> None:
    async def misused(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        raise StepError(Phase.IDLE, "event")
        yield DONE  # pragma: no cover

    d = driver(Model(misused))
    with pytest.raises(StepError):
        anyio.run(run, d, PromptSubmitted(text="call"))
    assert d.state[-1] == Cancelled()  # recorded on its way out


def test_an_interrupt_cuts_the_stream_and_its_cancel_is_fed_once() -> None:
    async def hangs(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="interrupt")
        await anyio.sleep_forever()
        yield DONE  # pragma: no cover

    model = Model(hangs)
    d = driver(model)
    anyio.run(run, d, PromptSubmitted(text="call"))
    assert d.state == (PromptSubmitted(text="call"), TextDelta(text="interrupt"), Cancelled())
    assert model.closed == 1


def test_an_interrupt_before_the_run_prevents_its_model_call() -> None:
    model = Model(answers)
    d = driver(model)
    d.interrupt()
    anyio.run(run, d, PromptSubmitted(text="call"))
    assert d.state == (PromptSubmitted(text="call"), Cancelled())
    assert model.requests == []


def test_an_abort_set_before_a_call_feeds_a_cancel_instead() -> None:
    model = Model(answers)
    abort = anyio.Event()
    d = driver(model, abort=abort)

    async def main() -> None:
        abort.set()
        await run(d, PromptSubmitted(text="call"))

    anyio.run(main)
    assert d.state == (PromptSubmitted(text="call"), Cancelled())
    assert model.requests == []


def test_an_abort_cuts_the_call_in_flight_and_feeds_a_cancel() -> None:
    abort = anyio.Event()

    async def hangs(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="par")
        abort.set()
        await anyio.sleep_forever()
        yield DONE  # pragma: no cover

    model = Model(hangs)
    d = driver(model, abort=abort)
    anyio.run(run, d, PromptSubmitted(text="call"))
    assert d.state == (PromptSubmitted(text="call"), TextDelta(text="par"), Cancelled())
    assert model.closed == 1


# --- a stop from outside ------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cancel_from_outside_is_recorded_under_a_shield_and_propagates(backend: str) -> None:
    saved: list[str] = []

    async def save() -> None:
        await anyio.lowlevel.checkpoint()  # would raise if the cancel reached it
        saved.append("saved")

    d = driver(handler=Handler(on_end=save))
    caught: list[bool] = []

    async def main() -> None:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run, d, PromptSubmitted(text="wait"))
                await anyio.wait_all_tasks_blocked()
                scope.cancel()
        caught.append(scope.cancelled_caught)

    anyio.run(main, backend=backend)
    assert d.state == (PromptSubmitted(text="wait"), Cancelled())
    assert saved == ["saved"] and caught == [True]


def test_an_error_stopping_the_run_is_raised_unwrapped_after_the_cancel_is_recorded() -> None:
    async def breaks(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="boom")
        yield DONE  # pragma: no cover

    handler = Handler()
    d = driver(Model(breaks), handler=handler)
    with pytest.raises(DiskFull, match="disk full"):  # not an ExceptionGroup
        anyio.run(run, d, PromptSubmitted(text="call"))
    assert d.state[-1] == Cancelled() and handler.done[-1] == "end"


def test_a_failure_to_record_the_cancel_does_not_hide_the_error_on_its_way() -> None:
    class Broken(RuntimeError):
        """A handler bug."""

    async def save() -> None:
        raise OSError("the cancel could not be saved either")

    handler = Handler(on_end=save)
    d = driver(handler=handler)

    async def begin() -> bool:
        await d.feed(PromptSubmitted(text="wait"))
        raise Broken("first")

    with pytest.raises(Broken, match="first"):
        anyio.run(functools.partial(d.run, begin=begin))
    assert d.state[-1] == Cancelled()


def test_a_failure_to_record_a_cancel_from_outside_is_raised_instead() -> None:
    async def save() -> None:
        raise OSError("the cancel could not be saved")

    d = driver(handler=Handler(on_end=save))

    async def main() -> None:
        with anyio.CancelScope() as scope:
            scope.cancel()  # the run is cancelled at its first wait
            await run(d, PromptSubmitted(text="wait"))

    with pytest.raises(OSError, match="could not be saved"):
        anyio.run(main)


def test_a_settled_state_records_no_cancel() -> None:
    d = driver(settled=lambda log: True)

    async def main() -> None:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run, d, PromptSubmitted(text="wait"))
                await anyio.wait_all_tasks_blocked()
                scope.cancel()

    anyio.run(main)
    assert d.state == (PromptSubmitted(text="wait"),)
