"""The journal port: every step of a session, appended in order, so it can be resumed and replayed.

A step is the event fed to `step`, with a per-session sequence number, and the
effects it produced in their recorded form (`effect_record`): JSON data where
a `CallModel` keeps its request minus the messages, which are replaced by
their count and a digest — the messages follow from the events, and storing
them per call would grow the journal with the square of the session. For the
same reason a `Finish` keeps a digest of its rounds and a `MessageRecorded`
notice a digest of its message: the step's `Persist` holds the message whole.

`MemoryJournal` is the default; `SQLiteJournal` (adapters/_sqlite.py) and
`JSONLJournal` (adapters/_jsonl.py) keep sessions on disk.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import attrs

from toolreel.core import (
    CallModel,
    ChatMessage,
    Effect,
    Emit,
    Event,
    Finish,
    LoopConfig,
    MessageRecorded,
    Persist,
    TextStreamed,
)

from ._memo import IdentityMemo
from ._serde import converter, effect_data


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

    def begin(self, session_id: str, config: LoopConfig, *, from_seq: int = 0) -> None:
        """Record the config in force for the session's steps after `from_seq`.

        A new session begins at 0; a continued one records its (maybe changed)
        config from its last step on, so earlier steps replay under theirs.
        """
        ...

    def configs(self, session_id: str) -> list[tuple[int, LoopConfig]]:
        """Every config of the session with the step after which it applies, in order."""
        ...

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Append steps and make them durable before returning."""
        ...

    def append_entries(self, session_id: str, entries: Sequence[JournalEntry]) -> None:
        """Append steps in their recorded form (importing a session)."""
        ...

    def config(self, session_id: str) -> LoopConfig:
        """The session's latest config (KeyError if no such session)."""
        ...

    def entries(self, session_id: str) -> Iterator[JournalEntry]:
        """The session's steps in order."""
        ...

    def sessions(self) -> list[str]:
        """Session ids, oldest first."""
        ...

    def release(self, session_id: str) -> None:
        """Give up this writer's ownership of the session (another writer may take it)."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...


def _sha(text: str) -> str:
    """A short stable digest of text."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _record_digest(record: object) -> str:
    """The digest of one record's canonical JSON."""
    return _sha(json.dumps(converter.unstructure(record), sort_keys=True))


class _Digests:
    """Digests of message lists that cost O(1) per request as a session grows.

    A request's messages are the history (a tuple that only grows) and the turn
    in progress (its rounds a tuple that only grows), made of the same frozen
    records from one request to the next. So each record is digested once, and
    each position's digest chains the one before it: remembered per record.
    """

    def __init__(self) -> None:
        """No records seen yet."""
        self._own: IdentityMemo[object, str] = IdentityMemo()
        self._chain: IdentityMemo[object, str] = IdentityMemo()

    def chain(self, records: Sequence[object], digest: Callable[[object], str]) -> str:
        """The chained digest of `records` (each position remembered per record)."""
        previous = ""
        for position in range(len(records) - 1, -1, -1):  # find the last chained record
            known = self._chain.peek(records[position])
            if known is not None:
                previous, start = known, position + 1
                break
        else:
            start = 0
        for record in records[start:]:
            previous = _sha(previous + self._own.get(record, digest))
            self._chain.get(record, _constant(previous))
        return previous

    def message(self, message: ChatMessage) -> str:
        """A message's digest: its rounds chained, then its other fields."""
        rounds = self.chain(message.tool_rounds, _record_digest)
        return _sha(rounds + _record_digest(attrs.evolve(message, tool_rounds=())))

    def messages(self, messages: Sequence[ChatMessage]) -> str:
        """The digest of a request's messages."""
        return self.chain(messages, self._message_digest)

    def _message_digest(self, message: object) -> str:
        """`message` for `chain`."""
        assert isinstance(message, ChatMessage)
        return self.message(message)


def _constant(value: str) -> Callable[[object], str]:
    """A function giving `value` whatever it is asked."""
    return lambda _: value


_DIGESTS = _Digests()


def messages_digest(messages: Sequence[ChatMessage]) -> str:
    """A stable digest of request messages (same messages, same digest, in any process)."""
    return _DIGESTS.messages(messages)


def effect_record(effect: Effect) -> dict[str, Any]:
    """An effect as the journal stores it (tagged JSON data; CallModel messages digested)."""
    data: dict[str, Any]
    if isinstance(effect, Emit) and type(effect.notice) is TextStreamed:
        # The hot path of every stream: one per text delta.
        return {"notice": {"text": effect.notice.text, "type": "TextStreamed"}, "type": "Emit"}
    if isinstance(effect, Finish):  # its rounds are in the step's Persist: digest them here
        rounds = effect.rounds
        data = effect_data(attrs.evolve(effect, rounds=()))
        del data["rounds"]
        data["rounds_count"] = len(rounds)
        data["rounds_digest"] = _DIGESTS.chain(rounds, _record_digest)
        return data
    if isinstance(effect, Emit) and isinstance(effect.notice, MessageRecorded):
        message = effect.notice.message  # the step's Persist holds it whole
        notice = {"type": "MessageRecorded", "message_digest": _DIGESTS.message(message)}
        return {"notice": notice, "type": "Emit"}
    if not isinstance(effect, CallModel):
        return effect_data(effect)
    messages = effect.request.messages
    bare = attrs.evolve(effect, request=attrs.evolve(effect.request, messages=()))
    data = effect_data(bare)
    request = data["request"]
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
        self._configs: dict[str, list[tuple[int, LoopConfig]]] = {}
        self._steps: dict[str, list[Step | JournalEntry]] = {}

    def begin(self, session_id: str, config: LoopConfig, *, from_seq: int = 0) -> None:
        """Remember the config from `from_seq` on (unless it is the one already in force)."""
        history = self._configs.setdefault(session_id, [])
        if not history or history[-1][1] != config:
            history.append((from_seq, config))
        self._steps.setdefault(session_id, [])

    def configs(self, session_id: str) -> list[tuple[int, LoopConfig]]:
        """The session's configs with the step after which each applies."""
        return list(self._configs[session_id])

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Keep the steps as they are (recorded forms are made only when read)."""
        self._steps.setdefault(session_id, []).extend(steps)

    def append_entries(self, session_id: str, entries: Sequence[JournalEntry]) -> None:
        """Keep recorded steps."""
        self._steps.setdefault(session_id, []).extend(entries)

    def config(self, session_id: str) -> LoopConfig:
        """The session's latest config."""
        return self._configs[session_id][-1][1]

    def entries(self, session_id: str) -> Iterator[JournalEntry]:
        """The session's steps."""
        return (
            item if isinstance(item, JournalEntry) else entry(item)
            for item in list(self._steps.get(session_id, ()))
        )

    def sessions(self) -> list[str]:
        """Session ids in the order they began."""
        return list(self._configs)

    def release(self, session_id: str) -> None:
        """Give up this writer's ownership of the session."""

    def close(self) -> None:
        """Nothing to release."""
