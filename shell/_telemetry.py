"""Telemetry: the one seam through which logs and traces learn what a run does.

A `Turn` (a protocol of lifecycle callbacks) is told when a turn (or an agent
run), a model call and a tool call start and end, when a retry waits, and when
a round is complete. It is told where the effects are carried out: the Driver
makes each run's watcher (`Telemetry.turn`, its observer) and tells it of each
model call (`CallModel`) and of the run's end; the runner tells it of each tool
run (`RunTool`, `Reflect`), each `StartTimer` (only a retry's backoff) and each
`RoundFinished`. The core stays pure: nothing here is core policy, only what is
observed as it is carried out.

Every turn is watched by the logging turn (`LogTurn`: shell/_telemetry_log.py) and by each
observer registered with `add_observer` (`toolreel.otel.instrument()` adds one
that makes OpenTelemetry spans). With none registered, a turn costs one tuple
check at its start and a few calls per model and tool call; nothing is done per
streamed event. What an observer raises is logged and never breaks a run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol, TypeAlias

import attrs

from toolreel.adapters.redaction import Redactor, logger
from toolreel.core import (
    CallModel,
    Finish,
    ModelCallFailed,
    ModelResponded,
    ToolCall,
    ToolFinished,
    ToolTimedOut,
)
from toolreel.core.record import Value

from ._telemetry_log import LogTurn

__all__ = [
    "NO_TURN",
    "ModelOutcome",
    "Observer",
    "Telemetry",
    "ToolOutcome",
    "Turn",
    "TurnEnd",
    "TurnInfo",
    "add_observer",
    "remove_observer",
    "watched_tool",
]

_telemetry_log = logger("toolreel.telemetry")

#: How a model call ended: its last event, what it raised, or None when it was cut short.
ModelOutcome: TypeAlias = ModelResponded | ModelCallFailed | BaseException | None
#: How a tool call ended: its result (an error result included), its timeout, or what it raised.
ToolOutcome: TypeAlias = ToolFinished | ToolTimedOut | BaseException
#: How a turn ended: its `Finish` (an agent run's has `attempts`), or None (it raised).
TurnEnd: TypeAlias = Finish | None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TurnInfo(Value):
    """What is known of a turn before it starts (the same for every turn of a runner).

    `kind` is "loop" (a Client turn) or "agent" (an `execute_agent` run);
    `provider` the model port's provider ("openai", ...; "" when unknown);
    `base_url` its redacted base URL, if it has one.
    """

    kind: str
    provider: str
    model: str
    session_id: str = ""
    base_url: str | None = None
    redactor: Redactor = attrs.field(factory=Redactor, repr=False)


class Turn(Protocol):
    """The lifecycle callbacks of one turn; each is called once per thing it names."""

    def model_started(self, call: CallModel) -> None:
        """A model call is about to be made."""

    def model_ended(self, call: CallModel, outcome: ModelOutcome) -> None:
        """The model call is over (its events, unredacted, were fed to the reducer)."""

    def tool_started(self, call: ToolCall) -> None:
        """A tool call starts (in its own task: parallel calls overlap)."""

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """The tool call is over; called in the task that started it."""

    def retry_waiting(self, seconds: float) -> None:
        """The failing model call is retried after `seconds` (a `StartTimer`).

        Told while the call's failure is fed, so before that call's `model_ended`.
        """

    def round_finished(self, iteration: int, names: Sequence[str]) -> None:
        """Every call of the loop's round `iteration` has its result."""

    def ended(self, end: TurnEnd, error: BaseException | None) -> None:
        """The turn is over: how it finished, and what it raised (None: nothing)."""


#: Makes the watcher of one turn; registered with `add_observer`.
Observer: TypeAlias = Callable[[TurnInfo], Turn]

_observers: tuple[Observer, ...] = ()


def add_observer(observer: Observer) -> None:
    """Watch every turn that starts from now on with `observer` too (once, however often added)."""
    global _observers  # noqa: PLW0603 - the registry is process-wide, like a logger's handlers
    if observer not in _observers:
        _observers = (*_observers, observer)


def remove_observer(observer: Observer) -> None:
    """Stop watching new turns with `observer` (turns under way keep theirs)."""
    global _observers  # noqa: PLW0603
    _observers = tuple(known for known in _observers if known != observer)


class _NoTurn:
    """Watches nothing: the Driver's watcher outside a runner's turn."""

    def model_started(self, call: CallModel) -> None:
        """Nothing to do."""

    def model_ended(self, call: CallModel, outcome: ModelOutcome) -> None:
        """Nothing to do."""

    def tool_started(self, call: ToolCall) -> None:
        """Nothing to do."""

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """Nothing to do."""

    def retry_waiting(self, seconds: float) -> None:
        """Nothing to do."""

    def round_finished(self, iteration: int, names: Sequence[str]) -> None:
        """Nothing to do."""

    def ended(self, end: TurnEnd, error: BaseException | None) -> None:
        """Nothing to do."""


NO_TURN: Turn = _NoTurn()


class Telemetry:
    """One runner's telemetry: makes each turn's watcher (the Driver's observer)."""

    def __init__(self, info: TurnInfo) -> None:
        """Telemetry for the turns described by `info`."""
        self.info = info

    @classmethod
    def of(
        cls, kind: str, model: object, model_name: str, session_id: str, redactor: Redactor
    ) -> Telemetry:
        """Telemetry for a runner of `kind` calling the model port `model`."""
        base_url = getattr(model, "base_url", None)
        return cls(
            TurnInfo(
                kind=kind,
                provider=provider_of(model),
                model=model_name,
                session_id=session_id,
                base_url=redactor.text(base_url) if isinstance(base_url, str) else None,
                redactor=redactor,
            )
        )

    def turn(self) -> Turn:
        """A new turn's watcher: the logging one, and each registered observer's."""
        log = LogTurn(self.info)
        if not _observers:
            return log
        return _Fanout((log, *_made(self.info)))


def provider_of(model: object) -> str:
    """The provider a model port talks to: its codec's name, or its own `provider` ("")."""
    codec = getattr(model, "codec", None)
    name = getattr(codec, "name", None) or getattr(model, "provider", None)
    return name if isinstance(name, str) else ""


def _made(info: TurnInfo) -> list[Turn]:
    """Each registered observer's watcher of a turn (one that fails to make one is left out)."""
    made: list[Turn] = []
    for observer in _observers:
        try:
            made.append(observer(info))
        except Exception:
            _telemetry_log.warning("telemetry observer %r failed", observer, exc_info=True)
    return made


class _Fanout:
    """Tells several watchers; one that raises is logged and never breaks the run."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        """Tell each of `turns`, in order."""
        self.turns = tuple(turns)

    def _tell(self, name: str, *args: Any, turns: Iterable[Turn] | None = None) -> None:
        """Call `name` on every watcher (of `turns`, if given: the order to tell them in)."""
        for turn in self.turns if turns is None else turns:
            try:
                getattr(turn, name)(*args)
            except Exception:
                _telemetry_log.warning("telemetry %s failed in %r", name, turn, exc_info=True)

    def model_started(self, call: CallModel) -> None:
        """Tell every watcher."""
        self._tell("model_started", call)

    def model_ended(self, call: CallModel, outcome: ModelOutcome) -> None:
        """Tell every watcher."""
        self._tell("model_ended", call, outcome)

    def tool_started(self, call: ToolCall) -> None:
        """Tell every watcher."""
        self._tell("tool_started", call)

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """Tell every watcher."""
        self._tell("tool_ended", call, outcome)

    def retry_waiting(self, seconds: float) -> None:
        """Tell every watcher."""
        self._tell("retry_waiting", seconds)

    def round_finished(self, iteration: int, names: Sequence[str]) -> None:
        """Tell every watcher."""
        self._tell("round_finished", iteration, names)

    def ended(self, end: TurnEnd, error: BaseException | None) -> None:
        """Tell every watcher (in reverse: the last made, like a span opened last, ends first)."""
        self._tell("ended", end, error, turns=reversed(self.turns))


async def watched_tool(
    turn: Turn, call: ToolCall, work: Awaitable[ToolFinished | ToolTimedOut]
) -> ToolFinished | ToolTimedOut:
    """Await a tool call's `work`, told to `turn` as it starts and ends (even if it raises)."""
    turn.tool_started(call)
    try:
        finished = await work
    except BaseException as exc:
        turn.tool_ended(call, exc)
        raise
    turn.tool_ended(call, finished)
    return finished
