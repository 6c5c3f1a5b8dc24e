"""What a session workflow tells its callers as it runs: its stream's items, and their reading.

The workflow hosts a Temporal Workflow Stream (`temporalio.contrib.workflow_streams`)
on one topic, `TOPIC`. Two kinds of writer put JSON items on it:

- The workflow, as it folds: each `Emit`, `Persist`, `Finish` and `AwaitApproval`
  effect `step` returns, in fold order, tagged with the turn (`state.turns`) and,
  for the events a model call's activity returned, that call's key (`told`);
  and, as it starts a model call's activity, the call's key (`calling`). These are
  the journal's own effects: a caller who reads them sees what a local `Client`'s
  `events()` tells (`Persist` as `MessageRecorded`).
- The model call's activity, while the model writes: each text and reasoning delta,
  each tool call's start and each fragment of its arguments as it arrives (`live`),
  tagged with the call's key and the activity's attempt.
  The workflow never reads these: it folds only the events the activity returns.

`read(reading, item)` is a pure fold (as the core's `step`) from the items to what
the caller is told, for one turn:

1. Items of other turns are passed over; a live item counts only for the model
   call the turn's last `calling` named (a late one from a call the turn is done
   with is dropped).
2. Live text and reasoning are told at once (`TextStreamed`, `ReasoningStreamed`)
   and kept as "ahead": shown, not yet folded. So are a call's start and its
   argument fragments (`ToolCallStreaming` with the id and name its starts so far
   give, as the core's; `ToolArgumentsStreamed`), kept in order.
3. A live item of a later attempt (the worker of the earlier one was lost) voids
   what the call showed: `RetryScheduled`, as a retried model call does; one of an
   earlier attempt (a worker still running after it was replaced) is dropped.
4. Once the workflow tells the call's folded events, the call's live items are
   over. A told text that "ahead" already showed is not told twice: only what it
   adds is told. A told text that disagrees with what was shown voids the call's
   text (`RetryScheduled`) and tells all of it again, as folded. A told call start
   or fragment equal to the first one still ahead was shown: it is not told again;
   any other is told (a batch the stream lost).
5. Every other told effect is told as is; the turn's reading ends with its
   `Finish`, its pause (`AwaitApproval`) or manual mode's `ResultsRequested`.

So the caller sees text while the model writes, and ends with exactly the text
the journal holds.
"""

from __future__ import annotations

from typing import Any, TypeAlias, cast

import attrs

from toolreel.adapters import structure
from toolreel.core import (
    AwaitApproval,
    Effect,
    Emit,
    Event,
    Finish,
    Persist,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from toolreel.core.notices import (
    MessageRecorded,
    Notice,
    ReasoningStreamed,
    ResultsRequested,
    RetryScheduled,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallStreaming,
)
from toolreel.core.record import Value

#: The one topic of a session workflow's stream.
TOPIC = "toolreel"

#: What a caller is told: the turn's notices, then its `Finish` or its pause.
Said: TypeAlias = Notice | Finish | AwaitApproval


def told_item(turn: int, effect: dict[str, Any], call: str | None) -> dict[str, Any]:
    """The workflow's item for one effect (tagged JSON data) of `turn`; `call`: the model
    call whose events it folded, if any."""
    return {"turn": turn, "told": effect, "call": call}


def calling_item(turn: int, call: str) -> dict[str, Any]:
    """The workflow's item for a model call of `turn` it starts (its activity's key)."""
    return {"turn": turn, "calling": call}


def live_item(call: str, attempt: int, event: dict[str, Any]) -> dict[str, Any]:
    """The activity's item for one delta (tagged JSON data) of `call`, attempt `attempt`."""
    return {"call": call, "attempt": attempt, "live": event}


#: A call's start or argument fragment, told live and again once folded (rule 2).
CallNotice: TypeAlias = ToolCallStreaming | ToolArgumentsStreamed


def is_live(event: Event) -> bool:
    """Whether an activity tells `event` while the model writes (text, reasoning, calls)."""
    if isinstance(event, TextDelta | ReasoningDelta):
        return bool(event.text)
    if isinstance(event, ToolCallArgumentsDelta):
        return bool(event.fragment)
    return isinstance(event, ToolCallStarted)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Shown(Value):
    """What a model call showed of one kind of text: live, not yet folded (`ahead`), and
    folded (`told`)."""

    ahead: str = ""
    told: str = ""


#: Nothing shown.
NOTHING = Shown()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Reading(Value):
    """Where a caller's reading of turn `turn` stands (rule 1-5 of the module docstring).

    `call`: the model call under way (its key), `attempt` the attempt it shows,
    `settled` once its folded events are told; `text` and `reasoning` what it showed.
    """

    turn: int
    call: str | None = None
    attempt: int = 0
    settled: bool = False
    text: Shown = NOTHING
    reasoning: Shown = NOTHING
    #: The calls the model began, by index: (index, id, name) as their starts so far give.
    starts: tuple[tuple[int, str, str], ...] = ()
    #: Call starts and fragments told live and not yet folded, in order.
    calls: tuple[CallNotice, ...] = ()
    over: bool = False


#: A reading after one item, and what the caller is told of it.
Step: TypeAlias = tuple[Reading, tuple[Said, ...]]


def read(reading: Reading, item: Any) -> Step:
    """One stream item folded into the reading; what the caller is told of it."""
    if reading.over or not isinstance(item, dict):
        return reading, ()
    if "live" in item:
        return _live(reading, item)
    if item.get("turn") != reading.turn:
        return reading, ()  # rule 1
    if "calling" in item:
        return Reading(turn=reading.turn, call=item["calling"]), ()
    if "told" in item:
        return _told(reading, item)
    return reading, ()


def _live(reading: Reading, item: dict[str, Any]) -> Step:
    """Rules 2 and 3: a delta the model wrote, told before the call is folded."""
    attempt = item.get("attempt")
    if item.get("call") != reading.call or reading.settled or not isinstance(attempt, int):
        return reading, ()
    if attempt < reading.attempt:
        return reading, ()
    said: list[Said] = []
    if attempt > reading.attempt:
        if reading.text.ahead or reading.reasoning.ahead or reading.calls:
            said.append(_void(attempt))
        reading = Reading(turn=reading.turn, call=reading.call, attempt=attempt)
    event = _event(item["live"])
    if isinstance(event, TextDelta) and event.text:
        text = attrs.evolve(reading.text, ahead=reading.text.ahead + event.text)
        reading = attrs.evolve(reading, text=text)
        said.append(TextStreamed(text=event.text))
    elif isinstance(event, ReasoningDelta) and event.text:
        shown = attrs.evolve(reading.reasoning, ahead=reading.reasoning.ahead + event.text)
        reading = attrs.evolve(reading, reasoning=shown)
        said.append(ReasoningStreamed(text=event.text))
    elif isinstance(event, ToolCallStarted | ToolCallArgumentsDelta):
        reading, notice = _call_notice(reading, event)
        said.append(notice)
    return reading, tuple(said)


def _call_notice(
    reading: Reading, event: ToolCallStarted | ToolCallArgumentsDelta
) -> tuple[Reading, CallNotice]:
    """A call's start (the id and name its starts so far give) or fragment, kept ahead."""
    notice: CallNotice
    if isinstance(event, ToolCallArgumentsDelta):
        notice = ToolArgumentsStreamed(index=event.index, fragment=event.fragment)
    else:
        old = next((s for s in reading.starts if s[0] == event.index), None)
        call_id = (old[1] if old else "") or event.call_id
        name = (old[2] if old else "") or event.name
        starts = (*(s for s in reading.starts if s[0] != event.index), (event.index, call_id, name))
        reading = attrs.evolve(reading, starts=starts)
        notice = ToolCallStreaming(index=event.index, call_id=call_id, name=name)
    return attrs.evolve(reading, calls=(*reading.calls, notice)), notice


def _told(reading: Reading, item: dict[str, Any]) -> Step:
    """Rules 4 and 5: an effect the workflow folded, told once."""
    effect = _effect(item["told"])
    if effect is None:
        return reading, ()
    if item.get("call") is not None and item.get("call") == reading.call:
        reading = attrs.evolve(reading, settled=True)
        match effect:
            case Emit(notice=TextStreamed(text=text)):
                return _reconciled(reading, text, reasoning=False)
            case Emit(notice=ReasoningStreamed(text=text)):
                return _reconciled(reading, text, reasoning=True)
            case Emit(notice=ToolCallStreaming() | ToolArgumentsStreamed() as notice):
                if reading.calls[:1] == (notice,):  # shown live (rule 4)
                    return attrs.evolve(reading, calls=reading.calls[1:]), ()
            case _:
                pass
    said = _said(effect)
    if said is None:
        return reading, ()
    over = isinstance(said, Finish | AwaitApproval | ResultsRequested)
    return attrs.evolve(reading, over=over), (said,)


def _reconciled(reading: Reading, text: str, *, reasoning: bool) -> Step:
    """A folded piece of text, against what the call showed ahead of it (rule 4)."""
    shown = reading.reasoning if reasoning else reading.text
    said: tuple[Said, ...] = ()
    if shown.ahead.startswith(text):
        kept = Shown(ahead=shown.ahead[len(text) :], told=shown.told + text)
    elif text.startswith(shown.ahead):
        kept, said = Shown(told=shown.told + text), (_piece(text[len(shown.ahead) :], reasoning),)
    else:
        return _retold(reading, text, reasoning=reasoning)
    return _kept(reading, kept, reasoning=reasoning), said


def _retold(reading: Reading, text: str, *, reasoning: bool) -> Step:
    """The preview went astray: void it, and tell the call's folded text whole (rule 4)."""
    shown = reading.reasoning if reasoning else reading.text
    reading = _kept(reading, Shown(told=shown.told + text), reasoning=reasoning)
    reading = attrs.evolve(
        reading, text=Shown(told=reading.text.told), reasoning=Shown(told=reading.reasoning.told)
    )
    said: list[Said] = [_void(reading.attempt)]
    if reading.reasoning.told:
        said.append(ReasoningStreamed(text=reading.reasoning.told))
    if reading.text.told:
        said.append(TextStreamed(text=reading.text.told))
    return reading, tuple(said)


def _kept(reading: Reading, shown: Shown, *, reasoning: bool) -> Reading:
    """The reading with what the call showed of one kind of text."""
    if reasoning:
        return attrs.evolve(reading, reasoning=shown)
    return attrs.evolve(reading, text=shown)


def _piece(text: str, reasoning: bool) -> Said:
    """A piece of text or of reasoning, as a notice."""
    return ReasoningStreamed(text=text) if reasoning else TextStreamed(text=text)


def _void(attempt: int) -> RetryScheduled:
    """What voids a model call's streamed text: the call is tried again (rule 3)."""
    message = f"the model call's worker was lost: its attempt {attempt} streams the text again"
    return RetryScheduled(retry=max(attempt - 1, 1), seconds=0.0, message=message)


def _said(effect: Effect) -> Said | None:
    """What the caller is told of an effect the workflow told (None: nothing)."""
    match effect:
        case Emit(notice=notice):
            return notice
        case Persist(message=message):
            return MessageRecorded(message=message)
        case Finish() | AwaitApproval():
            return effect
        case _:
            return None


def _effect(data: Any) -> Effect | None:
    """A told item's effect (None for data that is none: anyone may publish on a stream)."""
    try:
        return cast(Effect, structure(data, Effect))  # type: ignore[arg-type]
    except Exception:
        return None


def _event(data: Any) -> Event | None:
    """A live item's event (None for data that is none)."""
    try:
        return cast(Event, structure(data, Event))  # type: ignore[arg-type]
    except Exception:  # a stream item is a preview: bad data there is passed over
        return None
