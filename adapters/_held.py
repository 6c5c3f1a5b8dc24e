"""Redaction across stream pieces: an echo of a key split over several deltas is masked too.

`Redactor.event` masks one event at a time, so a key a provider echoes in two
text deltas (`"...ABCDEFGH"`, `"1234567890"`) would pass piece by piece. A
model stream therefore goes through `held_back` first: per channel (answer
text, reasoning text, each tool call's arguments) it holds back the end of
the text so far that could still grow into an echo — the longest suffix that
is a piece of a secret (`Redactor.tail`), from the start of the echo it
belongs to if one runs into it — and lets the rest through masked. Held text
goes on with the next piece of its channel, and is let out (masked) before
any other event and when the stream ends, so every piece still arrives, in
order, masked exactly as the whole text would be, and never holds a key.

Cost: only streams of a model whose redactor has secrets are wrapped. A piece
costs one `in` test per secret on its last character (a second or third when
it ends like a piece of a key), and an anchor search (adapters/_redact.py)
only once the piece and what was held reach 8 characters; it is passed on as
it is when nothing was held or needs holding (tests/bench/bench_redact.py
measures it on a 20,000-piece answer).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

import attrs

from toolreel.core import ModelEvent, ReasoningDelta, TextDelta, ToolCallArgumentsDelta

from ._redact import Redactor, masked

__all__ = ["held_back"]

_Channel = tuple[str, int]
_TEXT: _Channel = ("text", 0)
#: A reasoning channel's kind starts so; the provider that sent it follows (kept on each piece).
_REASONING = "reasoning:"


def _reasoning(provider: str) -> _Channel:
    """The channel of the reasoning text `provider` sends."""
    return (_REASONING + provider, 0)


def _cut(cut: int, spans: list[tuple[int, int]]) -> int:
    """`cut` (where the held tail starts) moved to the start of the echo it falls inside, if any.

    Then what goes out holds no half of an echo, and what is held no half either.
    """
    for start, end in spans:
        if start < cut < end:
            return start
    return cut


def _piece(channel: _Channel, text: str) -> ModelEvent:
    """A delta of `channel` carrying `text`."""
    kind, index = channel
    if kind == "text":
        return TextDelta(text=text)
    if kind == "arguments":
        return ToolCallArgumentsDelta(index=index, fragment=text)
    return ReasoningDelta(text=text, provider=kind.removeprefix(_REASONING))


async def held_back(
    events: AsyncIterator[ModelEvent], redactor: Redactor
) -> AsyncIterator[ModelEvent]:
    """`events` with every secret masked even when split across pieces (module docstring)."""
    held: dict[_Channel, str] = {}
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
            spans = redactor.spans(text)
            cut = redactor.tail(text)
            if spans:
                cut = _cut(cut, spans)
            if cut == len(text) and before is None:  # the common piece: nothing held or to hold
                yield redactor.event(event) if spans else event
                continue
            if cut < len(text):
                held[channel] = text[cut:]
            if cut:
                out = [span for span in spans if span[1] <= cut]  # none runs across the cut
                yield _piece(channel, masked(text[:cut], out))
        for pending in _released(held, redactor):
            yield pending
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


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
            return _reasoning(reasoning.provider), reasoning.text
    return None


def _closing(held: dict[_Channel, str], event: ModelEvent) -> ModelEvent:
    """A signed reasoning piece (it ends the block) with the block's held text put in front."""
    if isinstance(event, ReasoningDelta) and event.redacted is None:
        before = held.pop(_reasoning(event.provider), None)
        if before is not None:
            return attrs.evolve(event, text=before + event.text)
    return event


def _released(held: dict[_Channel, str], redactor: Redactor) -> list[ModelEvent]:
    """The held pieces, masked, in the order their channels began holding."""
    pieces = [_piece(channel, redactor.text(text)) for channel, text in held.items()]
    held.clear()
    return pieces
