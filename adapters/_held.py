"""Redaction across stream pieces: a key split over several deltas is masked too.

`Redactor.event` masks one event at a time, so a key a provider echoes in two
text deltas (`"sk-proj-abc"`, `"def123..."`) would pass piece by piece. A
model stream therefore goes through `held_back` first: per channel (answer
text, reasoning text, each tool call's arguments) it holds back the end of
the text so far that could still become a secret — the longest suffix that is
a proper prefix of one — and lets the rest through masked. Held text goes on
with the next piece of its channel, and is let out (masked) before any other
event, so every piece still arrives, in order, and never holds a key.

Cost: only streams of a model whose redactor has secrets are wrapped; a
piece costs a few `str.find` calls over its last `len(secret)` characters and
is passed on as it is when nothing was held or needs holding
(tests/bench/bench_held.py measures it: about 1 µs more a piece).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

import attrs

from toolreel.core import ModelEvent, ReasoningDelta, TextDelta, ToolCallArgumentsDelta

from ._redact import PROBE, Redactor

__all__ = ["held_back", "secret_start"]

_Channel = tuple[str, int]
_TEXT: _Channel = ("text", 0)
_REASONING: _Channel = ("reasoning", 0)


def secret_start(text: str, secrets: tuple[str, ...]) -> int:
    """Where the longest suffix of `text` that is a proper prefix of a secret starts (len: none)."""
    start = len(text)
    for secret in secrets:
        position = max(0, len(text) - len(secret) + 1)
        while (position := text.find(secret[0], position, start)) != -1:
            if secret.startswith(text[position:]):
                start = position
                break
            position += 1
    return start


def _cut(text: str, redactor: Redactor) -> int:
    """How much of `text` may go out now: never a start of a secret, never half an echo."""
    cut = secret_start(text, redactor.secrets)
    spans = redactor.spans(text) if cut < len(text) else []
    moved = bool(spans)
    while moved:
        moved = False
        for start, end in spans:
            if start < cut < end:  # an echo that stopped (it ends before the text does)
                cut = end + secret_start(text[end:], redactor.secrets)
                moved = True
    return cut


def _piece(channel: _Channel, text: str) -> ModelEvent:
    """A delta of `channel` carrying `text`."""
    kind, index = channel
    if kind == "text":
        return TextDelta(text=text)
    if kind == "arguments":
        return ToolCallArgumentsDelta(index=index, fragment=text)
    return ReasoningDelta(text=text)


async def held_back(
    events: AsyncIterator[ModelEvent], redactor: Redactor
) -> AsyncIterator[ModelEvent]:
    """`events` with every secret masked even when split across pieces (module docstring)."""
    held: dict[_Channel, str] = {}
    probes = tuple(secret[:PROBE] for secret in redactor.secrets)
    try:
        async for event in events:
            found = _piece_of(event)
            if found is None:
                whole = _closing(held, event)
                for pending in _released(held, redactor):
                    yield pending
                yield redactor.event(whole)
                continue
            channel, text = found
            before = held.pop(channel, None)
            if before is not None:
                text = before + text
            cut = _cut(text, redactor)
            if cut == len(text) and before is None:  # the common piece: nothing held or to hold
                yield event if _clean(text, probes) else redactor.event(event)
                continue
            if cut < len(text):
                held[channel] = text[cut:]
            if cut:
                yield _piece(channel, redactor.text(text[:cut]))
        for pending in _released(held, redactor):
            yield pending
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


def _clean(text: str, probes: tuple[str, ...]) -> bool:
    """Whether no secret's probe is in `text` (then it needs no masking)."""
    for probe in probes:  # noqa: SIM110 - once per streamed piece: a loop beats a generator
        if probe in text:
            return False
    return True


def _piece_of(event: ModelEvent) -> tuple[_Channel, str] | None:
    """A piece's channel and text, whose end may be held back (None: any other event)."""
    kind = type(event)
    if kind is TextDelta:
        return _TEXT, cast(TextDelta, event).text
    if kind is ToolCallArgumentsDelta:
        fragment = cast(ToolCallArgumentsDelta, event)
        return ("arguments", fragment.index), fragment.fragment
    if kind is ReasoningDelta:
        reasoning = cast(ReasoningDelta, event)
        if reasoning.signature is None and reasoning.redacted is None:
            return _REASONING, reasoning.text
    return None


def _closing(held: dict[_Channel, str], event: ModelEvent) -> ModelEvent:
    """A signed reasoning piece (it ends the block) with the block's held text put in front."""
    if isinstance(event, ReasoningDelta) and event.redacted is None and _REASONING in held:
        return attrs.evolve(event, text=held.pop(_REASONING) + event.text)
    return event


def _released(held: dict[_Channel, str], redactor: Redactor) -> list[ModelEvent]:
    """The held pieces, masked, in the order their channels began holding."""
    pieces = [_piece(channel, redactor.text(text)) for channel, text in held.items()]
    held.clear()
    return pieces
