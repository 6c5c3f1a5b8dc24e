"""Offline re-execution: a recorded session drives the whole shell, with no network.

`Recording` stands in for the model and the tools: each model request the
program makes is compared with the recorded one (the request as the journal
keeps it); while they match, the recorded model events are served and the
recorded tool outputs returned. The first request that differs stops the run
with `RequestMismatch` and the readable difference of the two requests
(adapters/_request_diff.py; the recorded one rebuilt by folding the journal)
— VCR-style tests at the level of meaning.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

import attrs
from returns.result import Failure, Result, Success

from toolreel.adapters import (
    Journal,
    JournalUnavailable,
    SessionError,
    SessionNotFound,
)
from toolreel.adapters._fold import fold_journal
from toolreel.adapters._request_diff import RequestDiff, diff_requests, request_form
from toolreel.core import (
    CallModel,
    ConfigError,
    FinishReason,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    PromptSubmitted,
    RetryPolicy,
    StepError,
    ToolFinished,
    ToolInterrupted,
    ToolTimedOut,
)

from ._agent import AgentDefinition, AgentFailure, AgentSuccess, execute_agent
from ._client import Client
from ._errors import ReplayError
from ._journal_files import is_sqlite, journal_name, open_path
from ._options import AgentOptions
from ._tools import Tool, as_tool

T = TypeVar("T")


class RequestMismatch(ReplayError):
    """The program asked the model something the recording did not.

    `request_diff` is the structured difference (a `RequestDiff`: which
    message, tool or setting changed, and how) when a recorded request was
    asked differently; None when the program made a call or tool call the
    recording does not hold at all.
    """

    def __init__(self, message: str, request_diff: RequestDiff | None = None) -> None:
        """The message, and the difference it shows (if any)."""
        super().__init__(message)
        self.request_diff = request_diff


@attrs.frozen(kw_only=True)
class RecordedCall:
    """One recorded model call: its request (journal form) and the events it streamed.

    `full` is the whole request, rebuilt by folding the journal (its digest
    checked against `request`), or None when the fold cannot rebuild it.
    """

    request: dict[str, Any]
    events: tuple[ModelEvent, ...]
    full: ModelRequest | None = None


class Recording:
    """A recorded session, ready to stand in for the model and the tools."""

    def __init__(self, journal: Journal, session_id: str | None = None) -> None:
        """Read the session (the only one in the journal when no id is given)."""
        sessions = journal.sessions()
        if session_id is None:
            if len(sessions) != 1:
                listed = ", ".join(repr(sid) for sid in sessions[:5]) or "none"
                raise ConfigError(
                    "session_id",
                    None,
                    f"the session to read: {journal_name(journal)} holds {listed}",
                )
            session_id = sessions[0]
        elif session_id not in sessions:
            raise SessionNotFound(session_id, journal_name(journal))
        self.session_id = session_id
        #: The session's config: a structured output's for an agent run (rerun it with `agent=`).
        self.config = journal.config(session_id)
        self.prompts: list[str] = []
        self.calls: list[RecordedCall] = []
        self._outputs: dict[tuple[str, str], deque[tuple[str, bool]]] = defaultdict(deque)
        self._read(journal)
        self._served = 0
        self.history: tuple[Any, ...] = ()

    @classmethod
    def from_file(cls, path: str | Path, session_id: str | None = None) -> Recording:
        """A recording from a journal file: an exported (or any) JSON-lines file, or SQLite.

        A missing file is `JournalUnavailable`; one that is neither kind, or
        damaged, `JournalCorrupt`; a session it does not hold, `SessionNotFound`.
        """
        path = Path(path)
        if not path.is_file():
            raise JournalUnavailable(f"no recording at {path}")
        journal = open_path(path, jsonl=not is_sqlite(path))
        try:
            return cls(journal, session_id)
        finally:
            journal.close()

    def _read(self, journal: Journal) -> None:
        """Collect prompts, model calls with their events, and tool outputs by call."""
        pending: dict[str, tuple[str, str]] = {}
        current: list[ModelEvent] | None = None
        request: dict[str, Any] | None = None
        full: ModelRequest | None = None
        rebuilt = iter(_rebuilt_requests(journal, self.session_id))
        for entry in journal.entries(self.session_id):
            event = entry.event
            if isinstance(event, PromptSubmitted):
                self.prompts.append(event.text)
            elif isinstance(event, ModelEvent) and current is not None:
                current.append(event)
                if isinstance(event, ModelResponded | ModelCallFailed):
                    assert request is not None
                    call = RecordedCall(request=request, events=tuple(current), full=full)
                    self.calls.append(call)
                    current = None
            elif isinstance(event, ToolFinished) and event.call_id in pending:
                self._outputs[pending.pop(event.call_id)].append((event.output, event.is_error))
            elif isinstance(event, ToolTimedOut | ToolInterrupted) and event.call_id in pending:
                told = _worded(entry.effects, event.call_id)  # as the core worded it then
                self._outputs[pending.pop(event.call_id)].append((told, True))
            for effect in entry.effects:
                if effect["type"] == "CallModel":
                    request, current, full = effect["request"], [], next(rebuilt, None)
                elif effect["type"] == "RunTool":
                    call = effect["call"]
                    pending[call["id"]] = (call["name"], call["arguments"])

    @property
    def model_name(self) -> str:
        """The model the session asked for: a rerun whose options name none asks for it too."""
        return self.config.model

    async def aclose(self) -> None:
        """Nothing to release: a recording holds no connection."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Serve the next recorded call's events, if the request matches the recorded one."""
        asked = _matched(request_form(request))
        if self._served >= len(self.calls):
            self._stop(_unrecorded(self._served + 1, request))
        recorded = self.calls[self._served]
        if asked != _matched(recorded.request):  # the digest check: the journal keeps no more
            diff = diff_requests(recorded.full or recorded.request, request, labels=LABELS)
            self._stop(f"model call {self._served + 1} differs from the recording:\n{diff}", diff)
        self._served += 1
        for event in recorded.events:
            yield event

    def _stop(self, message: str, diff: RequestDiff | None = None) -> None:
        """Stop the run: the driver raises a `ReplayError` from the port to the caller as is."""
        raise RequestMismatch(message, diff)

    def output(self, name: str, arguments: str) -> tuple[str, bool]:
        """The recorded output of the next call of `name` with these arguments."""
        queue = self._outputs.get((name, arguments))
        if not queue:
            self._stop(f"tool call {name}({arguments}) was never recorded")
        assert queue is not None
        return queue.popleft()

    def tools(self, tools: Sequence[Tool | Callable[..., Any]]) -> list[Tool]:
        """The given tools (same specs) answering with the recorded outputs instead of running."""
        return [RecordedTool.of(as_tool(item), self) for item in tools]

    @overload
    async def rerun(self, options: AgentOptions) -> list[FinishReason]: ...

    @overload
    async def rerun(
        self, options: AgentOptions, *, agent: AgentDefinition[Any, T]
    ) -> AgentSuccess[T] | AgentFailure: ...

    async def rerun(
        self, options: AgentOptions, *, agent: AgentDefinition[Any, Any] | None = None
    ) -> list[FinishReason] | AgentSuccess[Any] | AgentFailure:
        """Run the recording again with the recorded model and tool outputs.

        A chat session's prompts go through a Client built from `options`
        (the finish reason of each turn); an agent run's prompt goes through
        `execute_agent` with `agent`, its definition (the result). Raises
        `RequestMismatch` at the first request (or tool call) the recording
        does not hold; retries are immediate (no backoff sleeps). `agent` given
        for a chat session, or missing for an agent run, is a `ConfigError`.
        """
        opts = attrs.evolve(
            options,
            journal=None,
            retry=attrs.evolve(options.retry, base_delay=0.0, max_delay=0.0, max_retry_after=0.0),
        )
        if self.config.structured:
            if agent is None:
                raise ConfigError("agent", None, "the AgentDefinition of this agent run")
            return await self._rerun_agent(agent, opts)
        if agent is not None:
            raise ConfigError("agent", agent, "None: this recording is a chat session's")
        reasons = []
        chat = attrs.evolve(opts, tools=self.tools(list(opts.tools)))
        async with Client(chat, model=self) as client:
            for prompt in self.prompts:
                await client.query(prompt)
                finish = await client.wait()  # raises the mismatch that stopped the turn
                assert finish is not None
                reasons.append(finish.reason)
            self.history = client.history
        return reasons

    async def _rerun_agent(
        self, agent: AgentDefinition[Any, T], options: AgentOptions
    ) -> AgentSuccess[T] | AgentFailure:
        """Run the recorded prompt through `agent`, its helpers answering from the recording."""
        prompt = self.prompts[0] if self.prompts else ""
        rerun = attrs.evolve(
            agent, build_prompt=lambda _input: prompt, helpers=self.tools(list(agent.helpers))
        )
        result = await execute_agent(rerun, None, options, model=self)
        self.history = result.metadata.history
        return result


@attrs.frozen(kw_only=True, eq=False)
class RecordedTool(Tool):
    """A tool whose calls return what the recording says they returned (errors included)."""

    recording: Recording

    @classmethod
    def of(cls, tool: Tool, recording: Recording) -> RecordedTool:
        """`tool`'s spec and settings, with the recording as its outcome."""
        fields = {a.name: getattr(tool, a.name) for a in attrs.fields(Tool) if a.init}
        return cls(recording=recording, **fields)

    async def run(self, arguments_json: str) -> Result[str, str]:
        """The recorded outcome of this call."""
        output, is_error = self.recording.output(self.name, arguments_json)
        return Failure(output) if is_error else Success(output)


def _worded(effects: tuple[dict[str, Any], ...], call_id: str) -> str:
    """The result text a step's recorded `ToolResultReady` gave the call `call_id`."""
    for data in effects:
        notice = data.get("notice", {}) if data.get("type") == "Emit" else {}
        result = notice.get("result", {}) if notice.get("type") == "ToolResultReady" else {}
        if result.get("call_id") == call_id:
            return str(result.get("content", ""))
    return ""


def _unrecorded(number: int, request: ModelRequest) -> str:
    """A model call past the recording's end: how many were recorded, and what it asked."""
    last = request.messages[-1] if request.messages else None
    asked = f"{last.role}: {last.content or '(tool rounds)'}" if last else "(no messages)"
    return (
        f"model call {number} was never recorded (the recording holds {number - 1}); "
        f"its last message is {asked}"
    )


#: How a mismatch names the two sides.
LABELS = ("recorded", "asked")


def _matched(form: dict[str, Any]) -> dict[str, Any]:
    """What of a request's journal form a rerun must ask again: all but the prompt-cache key.

    The key is the session's id (core `LoopConfig.cache_key`), and a rerun is a new session.
    """
    if "cache_key" not in form:
        return form
    return {name: value for name, value in form.items() if name != "cache_key"}


def _rebuilt_requests(journal: Journal, session_id: str) -> list[ModelRequest | None]:
    """Every recorded `CallModel`'s whole request, in order, rebuilt by folding the journal.

    A request whose rebuilt form does not match the recorded one (digest
    included) is None, and so is every one after a step the reducer refuses.
    """
    found: list[ModelRequest | None] = []
    try:
        for entry, effects in fold_journal(journal, session_id):
            made = [e.request for e in effects if isinstance(e, CallModel)]
            kept = [e for e in entry.effects if e["type"] == "CallModel"]
            for index, form in enumerate(kept):
                request = made[index] if index < len(made) else None
                same = request is not None and request_form(request) == form["request"]
                found.append(request if same else None)
    except (StepError, SessionError):
        pass  # the rest stay unknown: mismatches show the digest alone
    return found


__all__ = ["RecordedCall", "Recording", "RequestMismatch", "RetryPolicy"]
