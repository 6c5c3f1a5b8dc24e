"""The body of a SQLite journal row: consecutive steps as JSON, stream deltas in runs.

A row is a JSON list of items, each one of:

- `[seq, event, effects]`: one step, event and effects as tagged JSON data
  (every row written before runs existed holds only these);
- `["TextDelta", first_seq, [text, ...]]`: consecutive steps, each a
  `TextDelta` whose only effect is the `Emit(TextStreamed)` of its text;
- `["ToolArgumentsStreamed", first_seq, index, [fragment, ...]]`: consecutive
  steps, each an argument fragment of the call at `index` whose only effect is
  the `Emit(ToolArgumentsStreamed)` of it (the runs written since fragments
  are told);
- `["ToolCallArgumentsDelta", first_seq, index, [fragment, ...]]`: consecutive
  steps, each an argument fragment of the call at `index`, with no effect (the
  runs written before fragments were told, and runs of empty fragments; still
  read, and a replay folds them as the reducer's notices: adapters/_fold.py).

Deltas are most of a session's steps, and a replay decodes every one: a run
stores each as one JSON string, which orjson reads several times faster than
the same step as nested objects. A run holds exactly what the steps would
(`encode_row` makes one only when the recorded effects are the ones the run
stands for), so reading it back gives equal `JournalEntry`s.

A replay need not take a run apart: `decode_items` gives each run whole, as a
`Run`, for the fold to check at once (adapters/_fold.py); `decode_row` gives
every step as a `JournalEntry`, for every other reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count
from typing import Any, TypeAlias

import attrs
import orjson

from toolreel.core import TextDelta, ToolCallArgumentsDelta
from toolreel.core.record import Value

from ._errors import JournalCorrupt
from ._journal import JournalEntry, decoded_step, seq_of, slim
from ._serde import event_of

TEXT = "TextDelta"
ARGUMENTS = "ToolCallArgumentsDelta"
TOLD_ARGUMENTS = "ToolArgumentsStreamed"
#: The kinds of a run of fragments, by the head a row stores (the kind itself).
_FRAGMENT_RUNS = {TOLD_ARGUMENTS: TOLD_ARGUMENTS, ARGUMENTS: ARGUMENTS}
_NO_EFFECTS: tuple[dict[str, Any], ...] = ()

#: One step as it is written: seq, event data, recorded effects.
StepData = tuple[int, dict[str, Any], list[dict[str, Any]]]


def _streamed(text: str) -> dict[str, Any]:
    """The recorded `Emit(TextStreamed)` of a text delta (as `effect_record` makes it)."""
    return {"notice": {"text": text, "type": "TextStreamed"}, "type": "Emit"}


def _told(index: int, fragment: str) -> dict[str, Any]:
    """The recorded `Emit(ToolArgumentsStreamed)` of a fragment (as `effect_record` makes it)."""
    notice = {"fragment": fragment, "index": index, "type": TOLD_ARGUMENTS}
    return {"notice": notice, "type": "Emit"}


def _run_of(data: dict[str, Any], effects: list[dict[str, Any]]) -> tuple[Any, ...] | None:
    """The run a step can join (its kind and, for fragments, the call's index), or None."""
    kind = data.get("type")
    if kind == TEXT and len(data) == 2 and effects == [_streamed(data["text"])]:
        return (TEXT,)
    if kind != ARGUMENTS or len(data) != 3:
        return None
    if not effects:
        return (ARGUMENTS, data["index"])
    if effects == [_told(data["index"], data["fragment"])]:
        return (TOLD_ARGUMENTS, data["index"])
    return None


def encode_row(steps: Sequence[StepData]) -> str:
    """The JSON text of a row holding `steps` (consecutive deltas joined into runs)."""
    items: list[list[Any]] = []
    open_run: tuple[Any, ...] | None = None
    next_seq = -1
    for seq, data, effects in steps:
        run = _run_of(data, effects)
        if run is None:
            items.append([seq, data, effects])
        elif run == open_run and seq == next_seq:
            items[-1][-1].append(data["text" if run[0] == TEXT else "fragment"])
        elif run[0] == TEXT:
            items.append([TEXT, seq, [data["text"]]])
        else:
            items.append([run[0], seq, run[1], [data["fragment"]]])
        open_run, next_seq = run, seq + 1
    return orjson.dumps(items).decode()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Run(Value):
    """Consecutive steps stored as one run: `seq` the first, one of `values` each.

    `kind` is `TEXT` (each a `TextDelta` of its text with the `Emit(TextStreamed)`
    of it as its only effect), `TOLD_ARGUMENTS` (each an argument fragment of the
    call at `index` with the `Emit(ToolArgumentsStreamed)` of it as its only
    effect) or `ARGUMENTS` (each an argument fragment of the call at `index`,
    with no effect: written before fragments were told).
    """

    seq: int
    kind: str
    index: int
    values: tuple[str, ...]

    def entries(self) -> list[JournalEntry]:
        """The run's steps, one `JournalEntry` each."""
        if self.kind == TEXT:
            return _texts(self.seq, self.values)
        return _fragments(self.seq, self.index, self.values, told=self.kind == TOLD_ARGUMENTS)


#: What a row holds, item by item: one step, or a run of steps.
Item: TypeAlias = JournalEntry | Run


def _texts(first: int, texts: Sequence[str]) -> list[JournalEntry]:
    """The steps of a run of text deltas."""
    return [
        JournalEntry(seq=seq, event=TextDelta(text=text), effects=(_streamed(text),))
        for seq, text in zip(count(first), texts, strict=False)
    ]


def _fragments(
    first: int, index: int, fragments: Sequence[str], *, told: bool
) -> list[JournalEntry]:
    """The steps of a run of argument fragments (each with its notice when `told`)."""
    return [
        JournalEntry(
            seq=seq,
            event=ToolCallArgumentsDelta(index=index, fragment=fragment),
            effects=(_told(index, fragment),) if told else _NO_EFFECTS,
        )
        for seq, fragment in zip(count(first), fragments, strict=False)
    ]


def _item(item: list[Any]) -> Item:
    """One item of a row as it is stored: a step, or a whole run (see the module docstring)."""
    head = item[0]
    if head.__class__ is int:
        seq, event, effects = item
        return JournalEntry(seq=seq, event=event_of(event), effects=tuple(effects))
    if head == TEXT:
        _, first, texts = item
        _check_seq(first)
        return Run(seq=first, kind=TEXT, index=0, values=tuple(_strings(texts)))
    if head in _FRAGMENT_RUNS:
        _, first, index, fragments = item
        _check_seq(first)
        if index.__class__ is not int:
            raise ValueError(f"not a call's index: {index!r}")
        kind = _FRAGMENT_RUNS[head]
        return Run(seq=first, kind=kind, index=index, values=tuple(_strings(fragments)))
    raise ValueError(f"not a step: {head!r}")


def _check_seq(seq: Any) -> None:
    """Refuse a run whose first step's number is no integer."""
    if seq.__class__ is not int:
        raise ValueError(f"not a step's number: {seq!r}")


def _strings(values: list[Any]) -> list[str]:
    """`values`, checked to be a list of strings (a run's texts or fragments)."""
    if values.__class__ is not list:
        raise ValueError(f"not a run's strings: {values!r}")
    "".join(values)  # a TypeError unless every one is a string (at C speed: once per run)
    return values


def decode_row(
    path: str, session_id: str, first: int, body: str, *, legacy: bool = False
) -> list[JournalEntry]:
    """The steps of a row, decoded; `JournalCorrupt` naming the step that does not decode.

    `legacy`: a row written before long tool results were kept once (and
    before runs), whose effects are brought to today's shape.
    """
    found: list[JournalEntry] = []
    for item in decode_items(path, session_id, first, body, legacy=legacy):
        if isinstance(item, Run):
            found += item.entries()
        else:
            found.append(item)
    return found


def decode_items(
    path: str, session_id: str, first: int, body: str, *, legacy: bool = False
) -> list[Item]:
    """The items of a row, each step decoded and each run whole (`decode_row`'s errors)."""
    try:
        items = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise JournalCorrupt(
            path, f"undecodable steps ({exc})", session_id=session_id, seq=first
        ) from exc
    if not isinstance(items, list):
        raise JournalCorrupt(path, "undecodable steps", session_id=session_id, seq=first)
    try:  # the hot loop of every replay
        if legacy:
            items = [[seq, event, [slim(e) for e in effects]] for seq, event, effects in items]
        return [_item(item) for item in items]
    except Exception:
        pass  # find the step at fault, and say which
    for item in items:
        _located(path, session_id, item, first)
    raise JournalCorrupt(path, "undecodable steps", session_id=session_id, seq=first)


def _located(path: str, session_id: str, item: Any, first: int) -> None:
    """Decode one item alone; `JournalCorrupt` naming its step if it does not decode."""
    seq = item[1] if isinstance(item, list) and len(item) > 1 and isinstance(item[0], str) else None
    if seq is None:
        decoded_step(path, session_id, item, seq=seq_of(item) or first)
        return
    try:
        _item(item)
    except Exception as exc:
        detail = f"undecodable steps ({type(exc).__name__}: {exc})"
        where = seq if isinstance(seq, int) else first
        raise JournalCorrupt(path, detail, session_id=session_id, seq=where) from exc
