"""A test's recording file: the model calls its code made, in order, one JSON line each.

    {"toolreel": "recording", "version": 1}
    {"connection": {"provider": "openai", "base_url": "http://127.0.0.1:8000/v1",
                    "model": "gpt-4.1"},
     "request": {"model": "gpt-4.1", "tools": [...], ..., "messages_digest": "..."},
     "messages": [{"role": "user", "content": "What is 2 + 3?", ...}],
     "events": [{"type": "ToolCallStarted", ...}, ..., {"type": "ModelResponded", ...}]}

`request` is the request as a journal keeps it (its messages as a count and
a digest): what a replay compares. `messages` are the messages themselves,
for a reader and for the readable difference a mismatch shows; `events`
what the model streamed back (text joined into one delta a run);
`connection` where the call went (the key is never written; every secret
the reel knows is masked as `***` in the whole line). A file that is not one
(a session export, as recordings were first written) is read as a recorded
session: its model calls, in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from toolreel.adapters import effect_record, event_from_json, event_to_json, structure, unstructure
from toolreel.adapters.redaction import Redactor
from toolreel.core import CallModel, ModelEvent, ModelRequest, ToolreelError
from toolreel.core.record import Value
from toolreel.shell import Recording

#: A recording file's first line.
HEADER = {"toolreel": "recording", "version": 1}
#: The request fields that stand for its messages in the compared form.
DIGEST_FIELDS = ("messages_count", "messages_digest")


class TapeError(ToolreelError, ValueError):
    """A recording file that cannot be read (its line and why)."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TapeCall(Value):
    """One recorded model call: the request's compared form, what came back, where it went.

    `full` is the whole request when the file holds it (and it still matches
    `request`): a mismatch then shows which message changed, not just a digest.
    """

    request: Mapping[str, Any]
    events: tuple[ModelEvent, ...]
    full: ModelRequest | None = None
    connection: Mapping[str, Any] = attrs.field(factory=dict)


def request_form(request: ModelRequest) -> dict[str, Any]:
    """A request as a journal keeps it, and as a replay compares it: without its cache key.

    The prompt-cache key is the session's id (core `LoopConfig.cache_key`): each run of
    a test is a new session, asking the same.
    """
    form: dict[str, Any] = effect_record(CallModel(request=request, iteration=0))["request"]
    form.pop("cache_key", None)
    return form


def read_tape(path: Path) -> list[TapeCall]:
    """The calls a recording file holds (a session export's too); a damaged one: TapeError."""
    with path.open(encoding="utf-8") as lines:
        first = lines.readline()
        try:
            head = json.loads(first) if first.strip() else None
        except ValueError:
            head = None
        if head != HEADER:
            return _session_calls(path)
        return [_call(line, number) for number, line in enumerate(lines, start=2) if line.strip()]


def _session_calls(path: Path) -> list[TapeCall]:
    """The model calls of the one session an exported file holds."""
    recording = Recording.from_file(path)  # a ToolreelError when it is not one either
    return [
        TapeCall(request=call.request, events=call.events, full=call.full)
        for call in recording.calls
    ]


def _call(line: str, number: int) -> TapeCall:
    """One call from its line."""
    try:
        data = json.loads(line)
        form = dict(data["request"])
        decoded = [event_from_json(json.dumps(item)) for item in data["events"]]
        connection = dict(data.get("connection") or {})
    except (ValueError, KeyError, TypeError, ToolreelError) as exc:
        raise TapeError(f"line {number}: not a recorded model call ({exc})") from exc
    events = tuple(event for event in decoded if isinstance(event, ModelEvent))
    if len(events) != len(decoded):
        raise TapeError(f"line {number}: its events are not all model events")
    return TapeCall(
        request=form, events=events, full=_full(form, data.get("messages")), connection=connection
    )


def _full(form: Mapping[str, Any], messages: object) -> ModelRequest | None:
    """The whole request from its form and messages, if they still agree (else None)."""
    if not isinstance(messages, list):
        return None
    fields = {name: value for name, value in form.items() if name not in DIGEST_FIELDS}
    try:
        request = structure({**fields, "messages": messages}, ModelRequest)
    except Exception:  # a hand-edited or masked line: the digest is still compared
        return None
    return request if request_form(request) == dict(form) else None


def write_tape(path: Path, calls: Iterable[TapeCall], redactor: Redactor) -> None:
    """Write the calls over `path` (whole, or not at all), every known secret masked."""
    lines = [json.dumps(HEADER)]
    for call in calls:
        line: dict[str, Any] = {"connection": dict(call.connection), "request": dict(call.request)}
        if call.full is not None:
            line["messages"] = unstructure(call.full.messages)
        line["events"] = [json.loads(event_to_json(event)) for event in call.events]
        lines.append(redactor.text(json.dumps(line, ensure_ascii=False)))
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.write_text("\n".join(lines) + "\n", encoding="utf-8")
    part.replace(path)
