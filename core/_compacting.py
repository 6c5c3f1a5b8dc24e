"""Rule 18's transitions: the summary call's answer, and a call the provider found too long.

While the compaction policy's summary call streams (`Phase.SUMMARISING`), its
text is gathered without being told (it is no answer), and anything else it
sends is ignored. Its `ModelResponded` (usage counted like any call's) makes
the gathered text the summary of the turns it replaces; a failure drops those
turns unsummarised. Either way the turn's model call follows at once.

`retry_squeezed` answers a `ModelCallFailed` with `context_too_long`: the
policy's `on_too_long` leaves out the older half of the carried turns and
makes the same call once more, once a turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ._context import moved, squeezed
from ._events import (
    ModelCallFailed,
    ModelResponded,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from ._finish import Step, call_model, issue, spent_on
from ._response import EMPTY_STREAM, add_text
from ._state import Phase, State, Turn, with_stream


def _on_summary_text(state: State, event: TextDelta) -> Step:
    """Gather the summary's text (not told: it is not the turn's answer)."""
    if not event.text:
        return state, ()
    return with_stream(state, add_text(state.stream, event.text)), ()


def _ignored(state: State, event: object) -> Step:
    """Reasoning and calls in a summary call's answer are of no use: ignored."""
    return state, ()


def _summarised(state: State, turn: Turn, summary: str | None) -> Step:
    """The summary (None: none) replaces the turns it covers; the turn's call follows."""
    cut = state.context.summarising
    assert cut is not None
    state = attrs.evolve(state, stream=EMPTY_STREAM)
    state, told = moved(state, cut, summary=summary)
    state, effects = issue(state, turn)
    return state, (*told, *effects)


def _on_summary(state: State, event: ModelResponded) -> Step:
    """The summary call answered: its text is the summary; its usage is spent."""
    turn = state.turn
    assert turn is not None
    spent, session = spent_on(state, turn, event.usage)
    summary = state.stream.text.strip() or None
    state = attrs.evolve(state, spent=session)
    return _summarised(state, attrs.evolve(turn, spent=spent), summary)


def _on_summary_failed(state: State, event: ModelCallFailed) -> Step:
    """The summary call failed: the turns it was to cover are left out unsummarised."""
    turn = state.turn
    assert turn is not None
    return _summarised(state, turn, None)


def retry_squeezed(state: State, turn: Turn) -> Step | None:
    """ "Context too long": the older half of the carried turns left out, the call made
    once more (None: the policy does not, or there is nothing to leave out)."""
    found = squeezed(state, turn)
    if found is None:
        return None
    state, told = found
    turn = attrs.evolve(turn, squeezed=True)
    state, effects = call_model(state, turn, retry=turn.retry + 1)
    return state, (*told, *effects)


#: Rule 18: the summary call's events.
SUMMARY_ROWS: Mapping[tuple[Phase, type], Any] = {
    (Phase.SUMMARISING, TextDelta): _on_summary_text,
    (Phase.SUMMARISING, ReasoningDelta): _ignored,
    (Phase.SUMMARISING, ToolCallStarted): _ignored,
    (Phase.SUMMARISING, ToolCallArgumentsDelta): _ignored,
    (Phase.SUMMARISING, ModelResponded): _on_summary,
    (Phase.SUMMARISING, ModelCallFailed): _on_summary_failed,
}
