"""The journal port: every step of a session, appended in order, so it can be resumed and replayed.

A step is the event fed to `step`, with a per-session sequence number, and the
effects it produced in their recorded form (`effect_record`): JSON data where
a `CallModel` keeps its request minus the messages, which are replaced by
their count and a digest — the messages follow from the events, and storing
them per call would grow the journal with the square of the session.

`MemoryJournal` is the default; `SQLiteJournal` (adapters/_sqlite.py) and
`JSONLJournal` (adapters/_jsonl.py) keep sessions on disk.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import attrs

from toolreel.core import CallModel, ChatMessage, Effect, Event, LoopConfig, Persist

from ._serde import converter


@attrs.frozen(kw_only=True)
class Step:
    """One step as the runner hands it over: `seq`, the event, the effects it produced."""

    seq: int
    event: Event
    effects: tuple[Effect, ...]


@attrs.frozen(kw_only=True)
class JournalEntry:
    """One step as read back: `seq`, the event, and the effects' recorded form."""

    seq: int
    event: Event
    effects: tuple[dict[str, Any], ...]


class Journal(Protocol):
    """Where sessions are kept (append-only)."""

    def begin(self, session_id: str, config: LoopConfig) -> None:
        """Record a new session's config (again on resume: the latest is kept)."""
        ...

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Append steps and make them durable before returning."""
        ...

    def config(self, session_id: str) -> LoopConfig:
        """The session's config (KeyError if no such session)."""
        ...

    def entries(self, session_id: str) -> Iterator[JournalEntry]:
        """The session's steps in order."""
        ...

    def sessions(self) -> list[str]:
        """Session ids, oldest first."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...


def messages_digest(messages: Sequence[ChatMessage]) -> str:
    """A stable digest of request messages."""
    data = json.dumps(converter.unstructure(tuple(messages)), sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def effect_record(effect: Effect) -> dict[str, Any]:
    """An effect as the journal stores it (tagged JSON data; CallModel messages digested)."""
    data: dict[str, Any] = converter.unstructure(effect, Effect)
    if isinstance(effect, CallModel):
        request = data["request"]
        messages = effect.request.messages
        del request["messages"]
        request["messages_count"] = len(messages)
        request["messages_digest"] = messages_digest(messages)
    return data


def entry(step: Step) -> JournalEntry:
    """The recorded form of one step."""
    return JournalEntry(
        seq=step.seq, event=step.event, effects=tuple(effect_record(e) for e in step.effects)
    )


def persisted_messages(entries: Iterator[JournalEntry]) -> list[ChatMessage]:
    """The messages a session persisted, in order (from its `Persist` effects)."""
    found = []
    for item in entries:
        for data in item.effects:
            if data.get("type") == Persist.__name__:
                found.append(converter.structure(data["message"], ChatMessage))
    return found


def event_data(event: Event) -> dict[str, Any]:
    """An event as tagged JSON data."""
    data: dict[str, Any] = converter.unstructure(event, Event)
    return data


def event_of(data: dict[str, Any]) -> Event:
    """An event back from tagged JSON data."""
    event: Event = converter.structure(data, Event)  # type: ignore[arg-type]
    return event


def config_data(config: LoopConfig) -> dict[str, Any]:
    """A config as JSON data."""
    data: dict[str, Any] = converter.unstructure(config)
    return data


def config_of(data: dict[str, Any]) -> LoopConfig:
    """A config back from JSON data."""
    config: LoopConfig = converter.structure(data, LoopConfig)
    return config


class MemoryJournal:
    """Sessions kept in this process only (the default when no journal is given)."""

    def __init__(self) -> None:
        """No sessions yet."""
        self._configs: dict[str, LoopConfig] = {}
        self._steps: dict[str, list[Step]] = {}

    def begin(self, session_id: str, config: LoopConfig) -> None:
        """Remember the session's config."""
        self._configs[session_id] = config
        self._steps.setdefault(session_id, [])

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Keep the steps as they are (recorded forms are made only when read)."""
        self._steps.setdefault(session_id, []).extend(steps)

    def config(self, session_id: str) -> LoopConfig:
        """The session's config."""
        return self._configs[session_id]

    def entries(self, session_id: str) -> Iterator[JournalEntry]:
        """The session's steps."""
        return (entry(step) for step in list(self._steps.get(session_id, ())))

    def sessions(self) -> list[str]:
        """Session ids in the order they began."""
        return list(self._configs)

    def close(self) -> None:
        """Nothing to release."""
