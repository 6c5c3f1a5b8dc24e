"""The conversation as toolreel's records, and open_agent's `message_history` dicts from them.

toolreel keeps a conversation compactly: a user message, then one assistant
message per answered prompt holding its final text and its tool rounds (calls
with their results). open_agent shows OpenAI-style dicts: the user message, an
assistant message per response (`tool_calls` with JSON-text arguments), a
`tool` message per result. The core's state is the source of truth
(`dicts_of`); `Conversation` renders records plus a round in flight as dicts,
and reads dicts a user edited or assigned back into records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from toolreel.core import ChatMessage, State, ToolCall, ToolResult, ToolRound
from toolreel.core.record import Record
from toolreel.shell.engine import in_progress


def dicts_of(state: State) -> list[dict[str, Any]]:
    """The core's conversation as open_agent's dicts, the round in flight included."""
    pending = state.turn.pending if state.turn is not None else None
    conversation = Conversation(records=list(in_progress(state)))
    if pending is not None:
        conversation.open_text = pending.text
        conversation.open_calls = list(pending.calls)
        conversation.open_results = {r.call_id: r for r in pending.results if r is not None}
    return conversation.to_dicts()


#: The result a call gets when the history moves on without one (keeps it provider-valid).
NO_RESULT = '{"error": "no result was given for this call"}'


@attrs.define(repr=False)
class Conversation(Record):
    """toolreel's records, plus the last response's calls while they wait for results."""

    records: list[ChatMessage] = attrs.field(factory=list)
    open_text: str = ""
    open_calls: list[ToolCall] = attrs.field(factory=list)
    open_results: dict[str, ToolResult] = attrs.field(factory=dict)

    def add_user(self, text: str) -> None:
        """A user message (a round still open is closed first, unanswered calls failed)."""
        self._close(force=True)
        self.records.append(ChatMessage(role="user", content=text))

    def add_response(self, text: str, calls: Iterable[ToolCall]) -> None:
        """One model response: with calls it opens a round, else it is the final text."""
        self._close(force=True)
        calls = list(calls)
        if calls:
            self.open_text, self.open_calls, self.open_results = text, calls, {}
        else:
            self._append_text(text)

    def add_result(self, result: ToolResult) -> None:
        """The result of an open call; the round closes once every call has one."""
        self.open_results[result.call_id] = result
        self._close(force=False)

    def call(self, call_id: str) -> ToolCall | None:
        """The open call with this id, if any."""
        return next((call for call in self.open_calls if call.id == call_id), None)

    def owed(self) -> list[ToolCall]:
        """The open calls still without a result."""
        return [call for call in self.open_calls if call.id not in self.open_results]

    def ends_with_results(self) -> bool:
        """Whether the last thing said is tool results (so the model speaks next)."""
        last = self.records[-1] if self.records else None
        return bool(last and last.role == "assistant" and not last.content and last.tool_rounds)

    def _close(self, *, force: bool) -> None:
        """Store the open round once it has every result (or, forced, failing the missing)."""
        if not self.open_calls or (self.owed() and not force):
            return
        results = tuple(
            self.open_results.get(call.id)
            or ToolResult(call_id=call.id, name=call.name, content=NO_RESULT, is_error=True)
            for call in self.open_calls
        )
        done = ToolRound(
            assistant_text=self.open_text, tool_calls=tuple(self.open_calls), results=results
        )
        self.open_text, self.open_calls, self.open_results = "", [], {}
        last = self.records[-1] if self.records else None
        if last is not None and last.role == "assistant" and not last.content:
            self.records[-1] = attrs.evolve(last, tool_rounds=(*last.tool_rounds, done))
        else:
            self.records.append(ChatMessage(role="assistant", content="", tool_rounds=(done,)))

    def _append_text(self, text: str) -> None:
        """A final answer: it completes the assistant message its rounds began."""
        last = self.records[-1] if self.records else None
        if last is not None and last.role == "assistant" and not last.content:
            self.records[-1] = attrs.evolve(last, content=text)
        else:
            self.records.append(ChatMessage(role="assistant", content=text))

    # --- open_agent's dicts ---------------------------------------------------------------

    def to_dicts(self) -> list[dict[str, Any]]:
        """The conversation as OpenAI-style message dicts, the open round included."""
        dicts: list[dict[str, Any]] = []
        for message in self.records:
            if message.role == "user":
                dicts.append({"role": "user", "content": message.content})
                continue
            for done in message.tool_rounds:
                dicts += _round_dicts(done.assistant_text, done.tool_calls, done.results)
            if message.content:
                dicts.append({"role": "assistant", "content": message.content})
        if self.open_calls:
            given = [self.open_results[c.id] for c in self.open_calls if c.id in self.open_results]
            dicts += _round_dicts(self.open_text, self.open_calls, given)
        return dicts

    @classmethod
    def from_dicts(cls, dicts: Iterable[Mapping[str, Any]]) -> Conversation:
        """Records read back from message dicts (system messages are the options' business)."""
        conversation = cls()
        for message in dicts:
            role = message.get("role")
            if role == "user":
                conversation.add_user(_text(message.get("content")))
            elif role == "assistant":
                calls = [_call(item) for item in message.get("tool_calls") or ()]
                conversation.add_response(_text(message.get("content")), calls)
            elif role == "tool":
                call = conversation.call(str(message.get("tool_call_id")))
                if call is not None:
                    content = _text(message.get("content"))
                    conversation.add_result(
                        ToolResult(call_id=call.id, name=call.name, content=content)
                    )
        return conversation


def _round_dicts(
    text: str, calls: Iterable[ToolCall], results: Iterable[ToolResult]
) -> list[dict[str, Any]]:
    """One response with calls, then its results, as dicts."""
    assistant = {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ],
    }
    tool_messages = [
        {"role": "tool", "tool_call_id": r.call_id, "content": r.content, "name": r.name}
        for r in results
    ]
    return [assistant, *tool_messages]


def _call(item: Mapping[str, Any]) -> ToolCall:
    """A `tool_calls` entry as a core call."""
    function = item.get("function") or {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {})
    return ToolCall(id=str(item.get("id")), name=str(function.get("name")), arguments=arguments)


def _text(content: Any) -> str:
    """A message's content as text (None is empty; parts are joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)
