"""What changed between two model requests, as a person reads it (pure).

`diff_requests(recorded, replayed)` compares two requests field by field and
gives a `RequestDiff`: one `RequestChange` per difference (which message, by index
and role, and which field; which tool; which setting) and, as its text, each
change in place — settings as `old → new`, texts as a unified diff, JSON
(tool parameters, call arguments) pretty-printed before diffing, added and
removed messages and tools in full. Replay (shell/_replay.py) and offline
re-execution (shell/_recording.py) both show it.

Either side may be a `ModelRequest` or the journal's form of one
(`effect_record(CallModel)["request"]`), whose messages are only a count and a
digest: the messages are then compared by digest, and the change says so.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from toolreel.core import CallModel, ChatMessage, ModelRequest
from toolreel.core.record import Value

from ._journal import effect_record, messages_digest
from ._serde import unstructure

ChangeKind = Literal["changed", "added", "removed"]

#: The settings of a request compared as single values, in the order they are shown.
SETTINGS = ("model", "tool_choice", "max_tokens", "temperature")

#: Fields (by their last word) shown as a unified diff even when one line long.
TEXTS = frozenset({"prompt", "content", "text", "arguments", "description", "parameters"})


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RequestChange(Value):
    """One difference between the requests; `recorded`/`replayed` None where absent.

    `message` is the message's 1-based position (the replayed one's, or the
    recorded one's when it was removed) and `role` its role, for a change in
    the messages; `tool` the tool's name for a change in the tools; `field`
    what changed (`content`, `round 1 call 1 arguments`, `parameters`,
    `temperature`, ...).
    """

    kind: ChangeKind
    field: str
    recorded: str | None = None
    replayed: str | None = None
    message: int | None = None
    role: str | None = None
    tool: str | None = None

    @property
    def where(self) -> str:
        """Where the change is, in words: `message 2 (user) content`, `tool 'add' parameters`."""
        if self.message is not None:
            head = f"message {self.message} ({self.role})"
            return head if self.field == "" else f"{head} {self.field}"
        if self.tool is not None:
            return f"tool {self.tool!r}" if self.field == "" else f"tool {self.tool!r} {self.field}"
        return self.field

    def lines(self) -> list[str]:
        """The change as text: one line for a setting, else a heading and a diff."""
        if self.kind != "changed":
            text = self.replayed if self.kind == "added" else self.recorded
            sign = "+" if self.kind == "added" else "-"
            return [f"{self.where} {self.kind}:", *(f"  {sign} {line}" for line in _lines(text))]
        old, new = self.recorded or "", self.replayed or ""
        if self.field.rsplit(" ", 1)[-1] not in TEXTS and "\n" not in old + new:
            return [f"{self.where}: {old} → {new}"]
        diff = _unified(old, new) or [f"-{old!r}", f"+{new!r}"]  # (differing in line ends)
        return [f"{self.where}:", *(f"  {line}" for line in diff)]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RequestDiff(Value):
    """Every difference between a recorded request and a replayed one; its `str` is the text."""

    changes: tuple[RequestChange, ...]
    labels: tuple[str, str] = ("recorded", "replayed")

    @property
    def text(self) -> str:
        """A legend line, then each change."""
        if not self.changes:
            return "(no difference)"
        recorded, replayed = self.labels
        lines = [f"(- {recorded}, + {replayed})"]
        for change in self.changes:
            lines += change.lines()
        return "\n".join(lines)

    def __str__(self) -> str:
        """The text."""
        return self.text

    def __bool__(self) -> bool:
        """Whether anything differs."""
        return bool(self.changes)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class _Side(Value):
    """One request taken apart: settings, system prompt, tools, messages (or their digest)."""

    settings: dict[str, Any]
    system: str | None
    tools: dict[str, dict[str, str]]
    messages: tuple[ChatMessage, ...] | None
    count: int
    digest: str


def _side(request: ModelRequest | Mapping[str, Any]) -> _Side:
    """A request, or the journal's form of one, taken apart."""
    data: Mapping[str, Any] = unstructure(request) if isinstance(request, ModelRequest) else request
    tools = {str(t["name"]): {k: str(v) for k, v in t.items()} for t in data.get("tools", ())}
    settings = {name: data.get(name) for name in SETTINGS}
    if isinstance(request, ModelRequest):
        messages: tuple[ChatMessage, ...] | None = request.messages
        count, digest = len(request.messages), messages_digest(request.messages)
    else:
        messages, count, digest = None, data["messages_count"], data["messages_digest"]
    return _Side(
        settings=settings,
        system=data.get("system"),
        tools=tools,
        messages=messages,
        count=count,
        digest=digest,
    )


def diff_requests(
    recorded: ModelRequest | Mapping[str, Any],
    replayed: ModelRequest | Mapping[str, Any],
    *,
    labels: tuple[str, str] = ("recorded", "replayed"),
) -> RequestDiff:
    """The differences between two requests (each a `ModelRequest` or its journal form)."""
    old, new = _side(recorded), _side(replayed)
    changes = [*_setting_changes(old, new), *_tool_changes(old, new), *_message_changes(old, new)]
    return RequestDiff(changes=tuple(changes), labels=labels)


def request_form(request: ModelRequest) -> dict[str, Any]:
    """A request as the journal keeps it (messages as a count and a digest)."""
    form: dict[str, Any] = effect_record(CallModel(request=request, iteration=0))["request"]
    return form


def _setting_changes(old: _Side, new: _Side) -> list[RequestChange]:
    """Model, tool choice, limits, and the system prompt."""
    changes = [
        RequestChange(kind="changed", field=name, recorded=_value(a), replayed=_value(b))
        for name in SETTINGS
        if (a := old.settings[name]) != (b := new.settings[name])
    ]
    if old.system != new.system:
        kind: ChangeKind = "changed"
        if old.system is None or new.system is None:
            kind = "added" if old.system is None else "removed"
        changes.append(
            RequestChange(
                kind=kind, field="system prompt", recorded=old.system, replayed=new.system
            )
        )
    return changes


def _tool_changes(old: _Side, new: _Side) -> list[RequestChange]:
    """Tools removed, added, or changed (description as text, parameters as pretty JSON)."""
    changes = []
    for name, spec in old.tools.items():
        if name not in new.tools:
            changes.append(
                RequestChange(kind="removed", field="", tool=name, recorded=_tool_text(spec))
            )
            continue
        for field in ("description", "parameters"):
            a, b = spec.get(field, ""), new.tools[name].get(field, "")
            if a != b:
                changes.append(
                    RequestChange(
                        kind="changed",
                        field=field,
                        tool=name,
                        recorded=_pretty(a),
                        replayed=_pretty(b),
                    )
                )
    for name, spec in new.tools.items():
        if name not in old.tools:
            changes.append(
                RequestChange(kind="added", field="", tool=name, replayed=_tool_text(spec))
            )
    kept_old = [n for n in old.tools if n in new.tools]
    kept_new = [n for n in new.tools if n in old.tools]
    if kept_old != kept_new:
        changes.append(
            RequestChange(
                kind="changed",
                field="tools order",
                recorded=", ".join(kept_old),
                replayed=", ".join(kept_new),
            )
        )
    return changes


def _message_changes(old: _Side, new: _Side) -> list[RequestChange]:
    """Messages removed, added or changed (field by field), aligned as a sequence diff."""
    if old.messages is None or new.messages is None:
        if old.digest == new.digest:
            return []
        return [
            RequestChange(
                kind="changed",
                field="messages (only their digest is known: they could not be rebuilt)",
                recorded=_digested(old),
                replayed=_digested(new),
            )
        ]
    matcher = difflib.SequenceMatcher(None, old.messages, new.messages, autojunk=False)
    changes: list[RequestChange] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1)
        for offset in range(paired):
            changes += _fields_changed(
                old.messages[i1 + offset], new.messages[j1 + offset], j1 + offset
            )
        for index in range(i1 + paired, i2):
            message = old.messages[index]
            changes.append(
                RequestChange(
                    kind="removed",
                    field="",
                    message=index + 1,
                    role=message.role,
                    recorded=_message_text(message),
                )
            )
        for index in range(j1 + paired, j2):
            message = new.messages[index]
            changes.append(
                RequestChange(
                    kind="added",
                    field="",
                    message=index + 1,
                    role=message.role,
                    replayed=_message_text(message),
                )
            )
    return changes


def _fields_changed(old: ChatMessage, new: ChatMessage, index: int) -> list[RequestChange]:
    """The fields of message `index` (0-based, replayed side) that differ."""
    a, b = _message_fields(old), _message_fields(new)
    changes = []
    for field in [*a, *(name for name in b if name not in a)]:
        before, after = a.get(field), b.get(field)
        if before == after:
            continue
        kind: ChangeKind = "changed"
        if before is None or after is None:
            kind = "added" if before is None else "removed"
        changes.append(
            RequestChange(
                kind=kind,
                field=field,
                message=index + 1,
                role=new.role,
                recorded=before,
                replayed=after,
            )
        )
    return changes


def _message_fields(message: ChatMessage) -> dict[str, str]:
    """A message's fields by readable name, JSON pretty-printed, every detail included."""
    fields = {"role": message.role, "content": message.content}
    for number, reasoning in enumerate(message.reasoning, start=1):
        fields[f"reasoning {number}"] = _json(unstructure(reasoning))
    for number, tool_round in enumerate(message.tool_rounds, start=1):
        head = f"round {number}"
        fields[f"{head} text"] = tool_round.assistant_text
        for k, call in enumerate(tool_round.tool_calls, start=1):
            fields[f"{head} call {k}"] = f"{call.name} [{call.id}]"
            fields[f"{head} call {k} arguments"] = _pretty(call.arguments)
            if call.signature is not None:
                fields[f"{head} call {k} signature"] = call.signature
        for k, result in enumerate(tool_round.results, start=1):
            error = " (error)" if result.is_error else ""
            fields[f"{head} result {k}"] = f"{result.name} [{result.call_id}]{error}"
            fields[f"{head} result {k} content"] = _pretty(result.content)
        for k, reasoning in enumerate(tool_round.reasoning, start=1):
            fields[f"{head} reasoning {k}"] = _json(unstructure(reasoning))
    return fields


def _message_text(message: ChatMessage) -> str:
    """A whole message as text: its content, then its rounds' fields."""
    fields = _message_fields(message)
    del fields["role"]
    content = fields.pop("content")
    rest = [f"{name}: {value}" for name, value in fields.items() if value]
    return "\n".join([content, *rest] if content else rest) or content


def _tool_text(spec: Mapping[str, str]) -> str:
    """A whole tool: its description (if any), then its parameters as pretty JSON."""
    parameters = "parameters: " + _pretty(spec.get("parameters", "{}"))
    description = spec.get("description", "")
    return f"description: {description}\n{parameters}" if description else parameters


def _digested(side: _Side) -> str:
    """Messages known by count and digest."""
    plural = "" if side.count == 1 else "s"
    return f"{side.count} message{plural}, digest {side.digest}"


def _value(value: Any) -> str:
    """A setting as JSON (so None reads `null` and a str shows its quotes)."""
    return json.dumps(value, ensure_ascii=False)


def _json(value: Any) -> str:
    """Data as pretty JSON with sorted keys."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _pretty(text: str) -> str:
    """JSON text (an object or array) pretty-printed; other text as it is."""
    if not text.lstrip().startswith(("{", "[")):
        return text
    try:
        return _json(json.loads(text))
    except ValueError:
        return text


def _lines(text: str | None) -> list[str]:
    """Text as lines (one empty line for empty text)."""
    return (text or "").splitlines() or [""]


def _unified(old: str, new: str) -> list[str]:
    """A unified diff of two texts without file headers (hunk headers only between hunks)."""
    lines = list(difflib.unified_diff(_lines(old), _lines(new), lineterm="", n=3))[2:]
    hunks = sum(1 for line in lines if line.startswith("@@"))
    return [line for line in lines if hunks > 1 or not line.startswith("@@")]


__all__ = ["ChangeKind", "RequestChange", "RequestDiff", "diff_requests", "request_form"]
