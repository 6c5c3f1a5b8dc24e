"""A compaction told to the browser: the UI stream's transient `data-compacted` part, the plain
stream's `compacted` event and AG-UI's `compacted` custom event carry the notice's fields."""

from __future__ import annotations

from toolreel.core.notices import ContextCompacted
from toolreel.web._agui_stream import agui_events, agui_start
from toolreel.web.streams import plain_events, plain_start, ui_parts, ui_start

TOLD = ContextCompacted(first=0, start=4, summary="They added.", tokens=90)
FIELDS = {"first": 0, "start": 4, "summary": "They added.", "too_long": False, "tokens": 90}


def test_the_ui_stream_sends_a_transient_data_part() -> None:
    stream, _ = ui_start("m")
    _, parts = ui_parts(stream, TOLD, 0.0)
    assert parts == [{"type": "data-compacted", "data": FIELDS, "transient": True}]


def test_the_plain_stream_sends_a_compacted_event() -> None:
    stream, _ = plain_start("s")
    assert plain_events(stream, TOLD, 0.0)[1] == [("compacted", FIELDS)]


def test_ag_ui_sends_a_custom_event() -> None:
    stream, _ = agui_start("t", "r")
    (event,) = agui_events(stream, TOLD, 0.0)[1]
    assert (event.name, event.value) == ("toolreel.compacted", FIELDS)
