"""Incremental framing of response bodies: Server-Sent Events and newline-delimited JSON.

Both take bytes in whatever pieces the network delivers (a UTF-8 character or
a `\\r\\n` may be split across pieces) and return complete frames only.
The SSE parser follows the WHATWG event-stream rules: `\\r\\n`, `\\n` or `\\r`
line ends, `:` comments, multi-line `data:`, named events, one optional space
after the colon; an event is dispatched on a blank line, and an unterminated
event at the end of the stream is dropped.
"""

from __future__ import annotations

import codecs

import attrs

from toolreel.core.record import Value


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SSEEvent(Value):
    """One dispatched server-sent event (`event` is "message" when unnamed)."""

    data: str
    event: str = "message"
    id: str | None = None


class _Lines:
    """Splits decoded text into lines on `\\r\\n`, `\\n` or `\\r`, across feeds."""

    def __init__(self) -> None:
        """Start with no partial line."""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""
        self._skip_lf = False

    def feed(self, chunk: bytes, *, final: bool = False) -> list[str]:
        """The lines completed by `chunk`."""
        text = self._decoder.decode(chunk, final=final)
        if self._skip_lf and text.startswith("\n"):
            text = text[1:]
        if text:
            self._skip_lf = text.endswith("\r")
        text = self._partial + text
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self._partial = lines.pop()
        return lines

    def rest(self) -> str:
        """What is left after the last line end (at end of stream)."""
        rest = self._partial + self._decoder.decode(b"", final=True)
        self._partial = ""
        return rest


class SSEParser:
    """Turns a byte stream into `SSEEvent`s."""

    def __init__(self) -> None:
        """Start between events."""
        self._lines = _Lines()
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events completed by `chunk`."""
        events = []
        for line in self._lines.feed(chunk):
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def flush(self) -> list[SSEEvent]:
        """End of stream: a last unterminated line still counts; an open event is dropped."""
        rest = self._lines.rest()
        if rest:
            self._line(rest)
        return []

    def _line(self, line: str) -> SSEEvent | None:
        """Apply one line; a blank line dispatches the event being built."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._id = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        """The event built so far, if it has data."""
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return SSEEvent(data="\n".join(data), event=event or "message", id=self._id)


class LineParser:
    """Turns a byte stream into non-blank text lines (NDJSON)."""

    def __init__(self) -> None:
        """Start with no partial line."""
        self._lines = _Lines()

    def feed(self, chunk: bytes) -> list[str]:
        """The non-blank lines completed by `chunk`."""
        return [line for line in self._lines.feed(chunk) if line.strip()]

    def flush(self) -> list[str]:
        """A last line without a line end."""
        rest = self._lines.rest()
        return [rest] if rest.strip() else []
