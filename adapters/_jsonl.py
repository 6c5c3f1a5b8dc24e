"""JSONLJournal: sessions as JSON lines in one file — human-readable and diffable.

Each line is `{"session", "kind": "config" | "step", ...}`; `append` writes
its lines, flushes and fsyncs before returning.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from toolreel.core import LoopConfig

from ._journal import (
    JournalEntry,
    Step,
    config_data,
    config_of,
    effect_record,
)
from ._serde import event_data, event_of


class JSONLJournal:
    """A journal in the JSON-lines file at `path` (created if missing)."""

    def __init__(self, path: str | Path) -> None:
        """Open the file for appending."""
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file = self.path.open("a", encoding="utf-8")

    def __repr__(self) -> str:
        """Where the journal is."""
        return f"JSONLJournal({str(self.path)!r})"

    def _write(self, lines: list[dict[str, Any]]) -> None:
        """Append lines durably."""
        text = "".join(
            orjson.dumps(line, option=orjson.OPT_SORT_KEYS).decode() + "\n" for line in lines
        )
        with self._lock:
            self._file.write(text)
            self._file.flush()
            os.fsync(self._file.fileno())

    def begin(self, session_id: str, config: LoopConfig, *, from_seq: int = 0) -> None:
        """Record the config in force after step `from_seq` (unless it already is)."""
        try:
            if self.config(session_id) == config:
                return
        except KeyError:
            pass
        line = {"session": session_id, "kind": "config", "from_seq": from_seq}
        self._write([{**line, "config": config_data(config)}])

    def configs(self, session_id: str) -> list[tuple[int, LoopConfig]]:
        """The session's configs with the step after which each applies."""
        found = [
            (line.get("from_seq", 0), config_of(line["config"]))
            for line in self._lines()
            if line["session"] == session_id and line["kind"] == "config"
        ]
        if not found:
            raise KeyError(session_id)
        return found

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Record the steps."""
        self._write(
            [
                {
                    "session": session_id,
                    "kind": "step",
                    "seq": step.seq,
                    "event": event_data(step.event),
                    "effects": [effect_record(e) for e in step.effects],
                }
                for step in steps
            ]
        )

    def append_entries(self, session_id: str, entries: Sequence[JournalEntry]) -> None:
        """Record steps given in their recorded form."""
        self._write(
            [
                {
                    "session": session_id,
                    "kind": "step",
                    "seq": item.seq,
                    "event": event_data(item.event),
                    "effects": list(item.effects),
                }
                for item in entries
            ]
        )

    def _lines(self) -> Iterator[dict[str, Any]]:
        """Every complete line of the file (a torn last line from a crash is skipped)."""
        with self.path.open(encoding="utf-8") as file:
            for line in file:
                if line.endswith("\n"):
                    yield orjson.loads(line)

    def config(self, session_id: str) -> LoopConfig:
        """The session's latest config."""
        return self.configs(session_id)[-1][1]

    def entries(self, session_id: str) -> Iterator[JournalEntry]:
        """The session's steps in order."""
        for line in self._lines():
            if line["session"] == session_id and line["kind"] == "step":
                yield JournalEntry(
                    seq=line["seq"], event=event_of(line["event"]), effects=tuple(line["effects"])
                )

    def sessions(self) -> list[str]:
        """Session ids, oldest first."""
        seen: dict[str, None] = {}
        for line in self._lines():
            seen.setdefault(line["session"], None)
        return list(seen)

    def release(self, session_id: str) -> None:
        """Give up this writer's ownership of the session."""

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._file.close()
