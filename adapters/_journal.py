"""The journal port: every step of a session, appended in order, so it can be resumed and replayed.

A step is the event fed to `step`, with a per-session sequence number, and the
effects it produced in their recorded form (`effect_record`): JSON data where
a `CallModel` keeps its request minus the messages, which are replaced by
their count and a digest — the messages follow from the events, and storing
them per call would grow the journal with the square of the session. For the
same reason a `Finish` keeps a digest of its rounds: the step's `Persist`
holds them whole.
A tool result longer than `LONG` characters is kept once, in the event that
brought it (`ToolFinished`): the notices, hook requests
and `Persist` messages that repeat it keep its length and digest instead
(`persisted_messages` puts it back). Replay records its effects the same way.
Image bytes, whatever their size, are kept once too, in the event that brought
them (`PromptSubmitted`, `ToolFinished`): elsewhere an image keeps its media
type, the length and digest of its base64 text.

Older journals recorded some effects in an earlier shape; `current_records`
rewrites them as today's, so replaying them does not diverge: a `Finish` with
flat `reason`, `error`, ... fields gets an `outcome`, an `AskHook` of
PostToolUse becomes the `TellHook` it is now (and the others lose `result`), and the
`Emit(MessageRecorded)` that followed each `Persist` (now told by the shell on
`Persist`) is dropped.

Reading reports damage: data that does not decode raises `JournalCorrupt`
naming file, session and step; data that decodes but fails its checksum, or a
session missing steps, is told to a `Damage` (`load_session` turns it into
`Session.warnings`).

A session forked from another, or rerun from one, also has its origin
(`SessionOrigin`, adapters/_origin.py): metadata beside its steps, never read
by replay; a journal written before origins existed has none.

`MemoryJournal` is the default; `SQLiteJournal` (adapters/_sqlite.py) and
`JSONLJournal` (adapters/_jsonl.py) keep sessions on disk, `PostgresJournal`
(adapters/_postgres.py) in a database many processes share.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeAlias

import attrs

from toolreel.core import (
    CallModel,
    Cancelled,
    ChatMessage,
    Effect,
    Emit,
    Event,
    Finish,
    LoopConfig,
    Persist,
    PromptSubmitted,
    TellHook,
    ToolFinished,
)
from toolreel.core.hooks import Blocked
from toolreel.core.notices import (
    RoundFinished,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolResultReady,
)
from toolreel.core.outcomes import Capped, Completed, Failed, FailureCode, Outcome
from toolreel.core.policies import MaxIterationsPolicy
from toolreel.core.record import Value

from ._errors import JournalCorrupt, SessionBusy, SessionNotFound
from ._lease import Holds, Lease, Owner, check_current
from ._legacy import LegacyAgentConfig, is_legacy, legacy_config, legacy_data
from ._memo import IdentityMemo
from ._origin import SessionOrigin
from ._serde import effect_data, event_of, get_converter, structure, unstructure

#: The config a journal keeps for a session (an agent run's too: its `output` says so).
SessionConfig: TypeAlias = LoopConfig

#: The events and effects a journal's steps hold.
StepEvent: TypeAlias = Event
StepEffect: TypeAlias = Effect

#: Tool results longer than this are stored once, in their event (see the module docstring).
LONG = 1024


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Step(Value):
    """One step as the runner hands it over: `seq`, the event, the effects it produced."""

    seq: int
    event: StepEvent
    effects: tuple[StepEffect, ...]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class JournalEntry(Value):
    """One step as read back: `seq`, the event, and the effects' recorded form."""

    seq: int
    event: StepEvent
    effects: tuple[dict[str, Any], ...]


class Journal(Protocol):
    """Where sessions are kept (append-only)."""

    def begin(self, session_id: str, config: SessionConfig, *, from_seq: int = 0) -> Lease:
        """Hold the session; record the config in force for its steps after `from_seq`.

        A new session begins at 0; a continued one records its (maybe changed)
        config from its last step on, so earlier steps replay under theirs.
        `SessionBusy` if another writer holds the session (another process, or
        another holder of this object), or if it has steps after `from_seq`
        (another writer added them since the caller read it). The `Lease` is
        the caller's alone: `release(lease)` gives the session back.
        """
        ...

    def configs(self, session_id: str) -> list[tuple[int, SessionConfig]]:
        """Every config of the session with the step after which it applies, in order."""
        ...

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Append steps and make them durable before returning."""
        ...

    def append_entries(self, session_id: str, entries: Sequence[JournalEntry]) -> None:
        """Append steps in their recorded form (importing a session)."""
        ...

    def config(self, session_id: str) -> SessionConfig:
        """The session's latest config (KeyError if no such session)."""
        ...

    def entries(self, session_id: str, *, damage: Damage | None = None) -> Iterator[JournalEntry]:
        """The session's steps in order (checksum failures told to `damage`)."""
        ...

    def sessions(self) -> list[str]:
        """Session ids, oldest first."""
        ...

    def set_origin(self, session_id: str, origin: SessionOrigin) -> None:
        """Record where the session came from (a fork, a rerun): metadata, never a step."""
        ...

    def origin(self, session_id: str) -> SessionOrigin | None:
        """Where the session came from (None: it began with a prompt, or is unknown)."""
        ...

    def release(self, lease: Lease) -> None:
        """Give the session `lease` holds back (another writer may take it); a lease that no
        longer holds it gives nothing back."""
        ...

    def flush(self) -> None:
        """Write steps an earlier `append` could not (the file was locked)."""
        ...

    def close(self) -> None:
        """Write what is pending, give up every session, release files and connections."""
        ...


class Damage:
    """What reading found wrong but still readable: edited rows, missing steps."""

    def __init__(self) -> None:
        """Nothing found yet."""
        self._edited: dict[tuple[str, str], list[tuple[int, int]]] = {}
        self._missing: list[str] = []

    def edited(self, path: str, session_id: str, first: int, last: int) -> None:
        """Steps `first`..`last` no longer match the checksum written with them."""
        self._edited.setdefault((path, session_id), []).append((first, last))

    def missing(self, path: str, session_id: str, first: int, last: int) -> None:
        """Steps `first`..`last` are not in the journal (lost or deleted)."""
        steps = f"step {first} is" if first == last else f"steps {first}-{last} are"
        self._missing.append(f"{path}: session {session_id!r}: {steps} missing")

    @property
    def warnings(self) -> list[str]:
        """One line per finding, naming file, session and steps."""
        found = []
        for (path, session_id), spans in self._edited.items():
            steps = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
            found.append(
                f"{path}: session {session_id!r}: step(s) {steps} changed after they were "
                "written (checksum mismatch)"
            )
        return found + self._missing


def body_digest(text: str) -> str:
    """The checksum of a stored batch or line."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def decoded_step(
    path: str, session_id: str, data: Any, *, legacy: bool = False, seq: int | None = None
) -> JournalEntry:
    """One stored `[seq, event, effects]` decoded; `JournalCorrupt` if it does not."""
    try:
        number, event, effects = data
        if legacy:  # written before long tool results were kept once
            effects = [slim(effect) for effect in effects]
        return JournalEntry(seq=number, event=event_of(event), effects=tuple(effects))
    except Exception as exc:
        where = seq if seq is not None else seq_of(data)
        detail = f"undecodable step ({type(exc).__name__}: {exc})"
        raise JournalCorrupt(path, detail, session_id=session_id, seq=where) from exc


def seq_of(data: Any) -> int | None:
    """The sequence number of a stored step, if it has a readable one."""
    if isinstance(data, list) and data and isinstance(data[0], int):
        return data[0]
    return None


def _slim_result(result: dict[str, Any]) -> None:
    """Replace a long result's content by its length and digest (in place); images too."""
    content = result.get("content")
    if isinstance(content, str) and len(content) > LONG:
        del result["content"]
        result["content_length"] = len(content)
        result["content_digest"] = _sha(content)
    _slim_images(result)


def _slim_images(holder: dict[str, Any]) -> None:
    """Replace the bytes of the holder's images by their length and digest (in place)."""
    images = holder.get("images")
    if not images:
        return
    holder["images"] = [_slim_image(image) for image in images]


def _slim_image(image: dict[str, Any]) -> dict[str, Any]:
    """An image's record with its base64 bytes replaced by their length and digest."""
    data = image.get("data")
    if not isinstance(data, str):
        return image
    slim = {key: value for key, value in image.items() if key != "data"}
    return {**slim, "data_length": len(data), "data_digest": _sha(data)}


def _slim_rounds(rounds: list[dict[str, Any]]) -> None:
    """`_slim_result` for every result of recorded rounds."""
    for tool_round in rounds:
        for result in tool_round.get("results", ()):
            _slim_result(result)


def slim(data: dict[str, Any]) -> dict[str, Any]:
    """A recorded effect with long tool results kept once (see the module docstring)."""
    kind = data.get("type")
    if kind == "Emit":
        notice = data.get("notice", {})
        if notice.get("type") == "ToolResultReady":
            _slim_result(notice["result"])
        elif notice.get("type") == "RoundFinished":
            _slim_rounds([notice["round"]])
    elif kind == "Persist":
        _slim_rounds(data["message"].get("tool_rounds", []))
        _slim_images(data["message"])
    elif kind == "TellHook":
        _slim_result(data["result"])
    return data


def _sha(text: str) -> str:
    """A short stable digest of text."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _record_digest(record: object) -> str:
    """The digest of one record's canonical JSON."""
    return _sha(json.dumps(unstructure(record), sort_keys=True))


def _round_digest(record: object) -> str:
    """The digest of a tool round, its results' reasons left out: what the model is sent
    (a request's digest is the same with or without them; older journals had none)."""
    data: dict[str, Any] = unstructure(record)
    for result in data.get("results", ()):
        result.pop("reason", None)
    return _sha(json.dumps(data, sort_keys=True))


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
        rounds = self.chain(message.tool_rounds, _round_digest)
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


def effect_record(effect: StepEffect) -> dict[str, Any]:
    """An effect as the journal stores it (tagged JSON data; CallModel messages digested)."""
    data: dict[str, Any]
    if isinstance(effect, Emit) and type(effect.notice) is TextStreamed:
        # The hot path of every stream: one per text delta.
        return {"notice": {"text": effect.notice.text, "type": "TextStreamed"}, "type": "Emit"}
    if isinstance(effect, Emit) and type(effect.notice) is ToolArgumentsStreamed:
        # The hot path of a call's arguments: one per fragment.
        told = effect.notice
        notice = {"fragment": told.fragment, "index": told.index, "type": "ToolArgumentsStreamed"}
        return {"notice": notice, "type": "Emit"}
    if isinstance(effect, Finish):  # its rounds are in the step's Persist: digest them here
        rounds = effect.rounds
        data = effect_data(attrs.evolve(effect, rounds=()))
        del data["rounds"]
        data["rounds_count"] = len(rounds)
        data["rounds_digest"] = _DIGESTS.chain(rounds, _round_digest)
        return data
    if isinstance(effect, (Persist, TellHook)) or (
        isinstance(effect, Emit) and isinstance(effect.notice, (ToolResultReady, RoundFinished))
    ):
        return slim(effect_data(effect))
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
    """The messages a session persisted, in order (from its `Persist` effects).

    Long tool results, kept once in their events, are put back in place.
    """
    found = []
    outputs: dict[str, str] = {}
    for item in entries:
        event = item.event
        if isinstance(event, ToolFinished):
            outputs[_sha(event.output)] = event.output
        if isinstance(event, ToolFinished | PromptSubmitted) and event.images:
            for image in unstructure(event.images):
                if "data" in image:
                    outputs[_sha(image["data"])] = image["data"]
        for data in item.effects:
            if data.get("type") == Persist.__name__:
                message = _with_bytes(dict(data["message"]), outputs)
                message["tool_rounds"] = [
                    {**r, "results": [_restored(x, outputs) for x in r.get("results", ())]}
                    for r in message.get("tool_rounds", ())
                ]
                found.append(structure(message, ChatMessage))
    return found


def _with_bytes(holder: dict[str, Any], outputs: dict[str, str]) -> dict[str, Any]:
    """The holder with its images' bytes put back from the events."""
    images = holder.get("images")
    if not images or all("data_digest" not in image for image in images):
        return holder
    return {**holder, "images": [_image_bytes(image, outputs) for image in images]}


def _image_bytes(image: dict[str, Any], outputs: dict[str, str]) -> dict[str, Any]:
    """An image's record with its base64 bytes put back (`JournalCorrupt` if none has them)."""
    if "data_digest" not in image:
        return image
    digest = image["data_digest"]
    if digest not in outputs:
        raise JournalCorrupt("journal", "the bytes of an image are missing")
    kept = {key: value for key, value in image.items() if key not in ("data_digest", "data_length")}
    return {**kept, "data": outputs[digest]}


def _restored(result: dict[str, Any], outputs: dict[str, str]) -> dict[str, Any]:
    """A long result with its content (and its images' bytes) put back from the events."""
    result = _with_bytes(result, outputs)
    if "content_digest" not in result:
        return result
    restored = dict(result)
    digest = restored.pop("content_digest")
    del restored["content_length"]
    if digest not in outputs:
        raise JournalCorrupt("journal", f"the output of tool call {result['call_id']} is missing")
    restored["content"] = outputs[digest]
    return restored


def current_records(effects: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    """Recorded effects in today's shape (see the module docstring)."""
    return tuple(
        _finish_now(data) if _old_finish(data) else _hook_now(data)
        for data in effects
        if not _old_recorded(data)
    )


def _hook_now(data: dict[str, Any]) -> dict[str, Any]:
    """An `AskHook` as journals wrote it before `TellHook`: PostToolUse is told, not asked."""
    if data.get("type") != "AskHook" or "result" not in data:
        return data
    if data["point"] == "PostToolUse":
        return {"type": "TellHook", "call": data["call"], "result": data["result"]}
    return {key: value for key, value in data.items() if key != "result"}


def _old_recorded(data: dict[str, Any]) -> bool:
    """Whether a record is the `Emit(MessageRecorded)` older journals wrote after a `Persist`."""
    return data.get("type") == "Emit" and data.get("notice", {}).get("type") == "MessageRecorded"


def _old_finish(data: dict[str, Any]) -> bool:
    """Whether a record is a `Finish` as journals wrote it before the outcome union."""
    return data.get("type") == "Finish" and "reason" in data


def _finish_now(data: dict[str, Any]) -> dict[str, Any]:
    """An old `Finish` record with its flat fields folded into an `outcome`."""
    data = dict(data)
    reason, text = data.pop("reason"), data.pop("text", "")
    capped = data.pop("max_iterations_reached", False)
    error, model = data.pop("error", None), data.pop("model_finish_reason", None)
    block = data.pop("block_reason", None)
    outcome: Any
    if reason == "completed" and capped:
        policy = MaxIterationsPolicy.FINAL_ANSWER
        outcome = Capped(text=text, policy=policy, model_finish_reason=model)
    elif reason == "completed":
        outcome = Completed(text=text, model_finish_reason=model or "stop")
    elif reason == "max_iterations":
        outcome = Capped(text=text, policy=MaxIterationsPolicy.STOP, model_finish_reason=model)
    elif reason == "failed" and error is not None:
        code = FailureCode(error["kind"])
        outcome = Failed(code=code, message=error["message"], status=error.get("status"))
    elif reason == "cancelled":
        outcome = Cancelled()
    else:
        outcome = Blocked(reason=block or "")
    data["outcome"] = get_converter().unstructure(outcome, Outcome)
    return data


def config_data(config: SessionConfig) -> dict[str, Any]:
    """A config as JSON data (its fields alone; one read from bfd8293's agent journal in the
    shape it had: adapters/_legacy.py)."""
    if isinstance(config, LegacyAgentConfig):
        return legacy_data(config)
    data: dict[str, Any] = unstructure(config)
    return data


def config_of(data: dict[str, Any]) -> SessionConfig:
    """A config back from JSON data (bfd8293's agent runs' upgraded: adapters/_legacy.py)."""
    if is_legacy(data):
        return legacy_config(data)
    config: LoopConfig = structure(data, LoopConfig)
    return config


class MemoryJournal:
    """Sessions kept in this process only (the default when no journal is given).

    One writer per session here too: `begin` holds a session until `release`
    (two Clients sharing this object cannot both write one session).
    """

    def __init__(self) -> None:
        """No sessions yet."""
        self.owner = Owner.here()
        self._configs: dict[str, list[tuple[int, SessionConfig]]] = {}
        self._steps: dict[str, list[Step | JournalEntry]] = {}
        self._origins: dict[str, SessionOrigin] = {}
        self._holds = Holds(self.owner)

    def begin(self, session_id: str, config: SessionConfig, *, from_seq: int = 0) -> Lease:
        """Hold the session; remember the config from `from_seq` on (unless already in force)."""
        lease = self._holds.take(session_id)
        steps = self._steps.get(session_id)
        try:
            check_current(session_id, steps[-1].seq if steps else None, from_seq)
        except SessionBusy:
            self._holds.give_back(lease)
            raise
        history = self._configs.setdefault(session_id, [])
        if not history or history[-1][1] != config:
            history.append((from_seq, config))
        self._steps.setdefault(session_id, [])
        return lease

    def configs(self, session_id: str) -> list[tuple[int, SessionConfig]]:
        """The session's configs with the step after which each applies."""
        if session_id not in self._configs:
            raise SessionNotFound(session_id, repr(self))
        return list(self._configs[session_id])

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Keep the steps as they are (recorded forms are made only when read)."""
        self._steps.setdefault(session_id, []).extend(steps)

    def append_entries(self, session_id: str, entries: Sequence[JournalEntry]) -> None:
        """Keep recorded steps."""
        self._steps.setdefault(session_id, []).extend(entries)

    def config(self, session_id: str) -> SessionConfig:
        """The session's latest config."""
        return self.configs(session_id)[-1][1]

    def entries(self, session_id: str, *, damage: Damage | None = None) -> Iterator[JournalEntry]:
        """The session's steps (memory is never damaged)."""
        return (
            item if isinstance(item, JournalEntry) else entry(item)
            for item in list(self._steps.get(session_id, ()))
        )

    def sessions(self) -> list[str]:
        """Session ids in the order they began."""
        return list(self._configs)

    def set_origin(self, session_id: str, origin: SessionOrigin) -> None:
        """Remember where the session came from."""
        self._origins[session_id] = origin

    def origin(self, session_id: str) -> SessionOrigin | None:
        """Where the session came from, if it was forked or rerun."""
        return self._origins.get(session_id)

    def release(self, lease: Lease) -> None:
        """Give the session `lease` holds back."""
        self._holds.give_back(lease)

    def flush(self) -> None:
        """Nothing is ever pending."""

    def close(self) -> None:
        """Give up every session."""
        self._holds.clear()
