"""Offline re-execution: a recorded session drives the whole shell, with no network.

`Recording` stands in for the model and the tools: each model request the
program makes is compared with the recorded one (the request as the journal
keeps it); while they match, the recorded model events are served and the
recorded tool outputs returned. The first request that differs stops the run
with `RequestMismatch` and the readable difference of the two requests
(adapters/_request_diff.py; the recorded one rebuilt by folding the journal)
— VCR-style tests at the level of meaning.

A rerun answers every tool call the way the recorded session did, whatever the
options say: the recorded outputs where its tools ran, its caller's results in
manual mode, its person's decision on a call held for approval. Nobody is left
to wait for an answer no one will give: one the recording lacks is a
`RequestMismatch`. Each rerun serves the recording through a new `Playback`
(shell/_playback.py), so it starts from the beginning every time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, overload

import attrs

from toolreel.adapters import (
    Journal,
    JournalUnavailable,
    MemoryJournal,
    SessionNotFound,
)
from toolreel.core import (
    Approved,
    ConfigError,
    Denied,
    Finish,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    PromptSubmitted,
    ToolCall,
    ToolFinished,
    ToolInterrupted,
    ToolTimedOut,
)
from toolreel.core.notices import ResultsRequested
from toolreel.core.outcomes import FinishReason
from toolreel.core.policies import RetryPolicy

from ._agent import AgentDefinition, AgentFailure, AgentSuccess, execute_agent
from ._agent_approval import resume_agent
from ._client import Client
from ._errors import ApprovalPending
from ._journal_files import is_sqlite, journal_name, open_path
from ._options import AgentOptions
from ._playback import (
    CallKey,
    Playback,
    RecordedCall,
    RequestMismatch,
    mismatch,
    rebuilt_requests,
)
from ._tools import Tool

T = TypeVar("T")


class Recording:
    """A recorded session, ready to stand in for the model and the tools.

    It can be rerun any number of times (each `rerun` starts from its
    beginning). Used directly as a model port (`Client(options, model=recording)`,
    with `recording.tools(...)`), it serves its calls once, in order.
    """

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
        self._prompted: list[PromptSubmitted] = []  # the prompts with their images
        self.calls: list[RecordedCall] = []
        #: Each tool call's recorded outcomes (a tool's, or a manual caller's), in order.
        self._outputs: dict[CallKey, list[ToolFinished]] = defaultdict(list)
        #: Each held call's recorded decisions, in order.
        self._decisions: dict[CallKey, list[Approved | Denied]] = defaultdict(list)
        self._read(journal)
        self._direct = self._playback()  # what serving it as a model port has handed out
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
        """Collect prompts, model calls with their events, tool outcomes and decisions by call."""
        pending: dict[str, CallKey] = {}  # calls awaiting an outcome: run, or asked of the caller
        held: dict[str, CallKey] = {}  # calls awaiting a person's decision
        current: list[ModelEvent] | None = None
        request: dict[str, Any] | None = None
        full: ModelRequest | None = None
        rebuilt = iter(rebuilt_requests(journal, self.session_id))
        for entry in journal.entries(self.session_id):
            event = entry.event
            if isinstance(event, PromptSubmitted):
                self.prompts.append(event.text)
                self._prompted.append(event)
            elif isinstance(event, ModelEvent) and current is not None:
                current.append(event)
                if isinstance(event, ModelResponded | ModelCallFailed):
                    assert request is not None
                    call = RecordedCall(request=request, events=tuple(current), full=full)
                    self.calls.append(call)
                    current = None
            elif isinstance(event, ToolFinished) and event.call_id in pending:
                self._outputs[pending.pop(event.call_id)].append(event)
            elif isinstance(event, ToolTimedOut | ToolInterrupted) and event.call_id in pending:
                told = _worded(entry.effects, event.call_id)  # as the core worded it then
                lost = ToolFinished(call_id=event.call_id, output=told, is_error=True)
                self._outputs[pending.pop(event.call_id)].append(lost)
            elif isinstance(event, Approved | Denied) and event.call_id in held:
                self._decisions[held.pop(event.call_id)].append(event)
            for effect in entry.effects:
                notice = effect.get("notice") or {} if effect["type"] == "Emit" else {}
                if effect["type"] == "CallModel":
                    request, current, full = effect["request"], [], next(rebuilt, None)
                elif effect["type"] == "RunTool":
                    pending.update(_keyed([effect["call"]]))
                elif notice.get("type") == "ResultsRequested":  # manual mode: the caller answers
                    pending.update(_keyed(notice["calls"]))
                elif notice.get("type") == "ApprovalRequested":
                    held.update(_keyed([notice["call"]]))

    def _playback(self) -> Playback:
        """A new pass through the recording, from its beginning."""
        return Playback(self.calls, self.model_name, self._outputs, self._decisions)

    @property
    def model_name(self) -> str:
        """The model the session asked for: a rerun whose options name none asks for it too."""
        return self.config.model

    async def aclose(self) -> None:
        """Nothing to release: a recording holds no connection."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Serve the next recorded call's events, if the request matches the recorded one."""
        return self._direct.stream(request)

    def output(self, name: str, arguments: str) -> tuple[str, bool]:
        """The recorded output of the next call of `name` with these arguments."""
        told = self._direct.output(name, arguments)
        return told.output, told.is_error

    def tools(self, tools: Sequence[Tool | Callable[..., Any]]) -> list[Tool]:
        """The given tools (same specs) answering with the recorded outputs instead of running."""
        return self._direct.tools(tools)

    @overload
    async def rerun(self, options: AgentOptions) -> list[FinishReason]: ...

    @overload
    async def rerun(
        self, options: AgentOptions, *, agent: AgentDefinition[Any, T]
    ) -> AgentSuccess[T] | AgentFailure: ...

    async def rerun(
        self, options: AgentOptions, *, agent: AgentDefinition[Any, Any] | None = None
    ) -> list[FinishReason] | AgentSuccess[Any] | AgentFailure:
        """Run the recording again, from its beginning, with the recorded model and tool outputs.

        A chat session's prompts go through a Client built from `options`
        (the finish reason of each turn); an agent run's prompt goes through
        `execute_agent` with `agent`, its definition (the result). Raises
        `RequestMismatch` at the first request (or tool call) the recording
        does not hold; retries are immediate (no backoff sleeps). `agent` given
        for a chat session, or missing for an agent run, is a `ConfigError`.

        Tool calls are answered the way the recorded session answered them,
        whatever `options.auto_execute_tools` says: with the recorded outputs
        (and images) when its tools ran, with its caller's results (`add_tool_result`) in
        manual mode, and a call held for approval is approved or denied as it
        was. One the recording holds no answer for is a `RequestMismatch`.
        """
        opts = attrs.evolve(
            options,
            journal=None,
            retry=attrs.evolve(options.retry, base_delay=0.0, max_delay=0.0, max_retry_after=0.0),
        )
        if self.config.structured:
            if agent is None:
                raise ConfigError("agent", None, "the AgentDefinition of this agent run")
            return await self._rerun_agent(agent, opts, self._playback())
        if agent is not None:
            raise ConfigError("agent", agent, "None: this recording is a chat session's")
        return await self._rerun_chat(opts, self._playback())

    async def _rerun_chat(self, options: AgentOptions, playback: Playback) -> list[FinishReason]:
        """Each recorded prompt through a Client that answers tool calls as the session did."""
        chat = attrs.evolve(
            options,
            tools=playback.tools(list(options.tools)),
            auto_execute_tools=self.config.auto_execute,  # manual: answered in `_finished`
        )
        reasons = []
        async with Client(chat, model=playback) as client:
            for prompt in self._prompted:
                await client.query(prompt.text, images=prompt.images)
                reasons.append((await _finished(client, playback)).reason)
            self.history = client.history
        return reasons

    async def _rerun_agent(
        self, agent: AgentDefinition[Any, T], options: AgentOptions, playback: Playback
    ) -> AgentSuccess[T] | AgentFailure:
        """Run the recorded prompt through `agent`, its helpers answering from the recording
        and its held calls decided as they were (through `resume_agent`, which reads the run
        from a journal: one in memory)."""
        prompt = self._prompted[0] if self._prompted else PromptSubmitted(text="")
        rerun = attrs.evolve(
            agent,
            build_prompt=lambda _input: prompt.text,
            helpers=playback.tools(list(agent.helpers)),
        )
        journal, sid = MemoryJournal(), self.session_id
        run: Callable[[], Awaitable[AgentSuccess[T] | AgentFailure]] = partial(
            execute_agent,
            rerun,
            None,
            options,
            model=playback,
            journal=journal,
            session_id=sid,
            images=prompt.images,
        )
        while True:
            try:
                result = await run()
                break
            except ApprovalPending as paused:
                decided = [playback.decision(request.call) for request in paused.requests]
                run = partial(
                    resume_agent,
                    sid,
                    rerun,
                    options,
                    approve=[d.call_id for d in decided if isinstance(d, Approved)],
                    deny={d.call_id: d.reason for d in decided if isinstance(d, Denied)},
                    journal=journal,
                    model=playback,
                )
        self.history = result.metadata.history
        return attrs.evolve(result, metadata=attrs.evolve(result.metadata, journal=None))


async def _finished(client: Client, playback: Playback) -> Finish:
    """Read the turn to its `Finish`, answering what the recorded session's caller answered:
    the held calls' decisions and, in manual mode, the calls' results."""
    while True:
        finish: Finish | None = None
        asked: list[ToolCall] = []
        async for item in client.events():  # raises the mismatch that stopped the turn
            if isinstance(item, Finish):
                finish = item
            elif isinstance(item, ResultsRequested):
                asked.extend(item.calls)
        if finish is not None:
            return finish
        if not await _answer(client, playback, asked):  # not a loop for ever, even under -O
            mismatch("a rerun turn ended unfinished with no call awaiting an answer")


async def _answer(client: Client, playback: Playback, asked: list[ToolCall]) -> bool:
    """Decide the held calls and give the manual results as the recording did; whether
    anything awaited an answer."""
    held = client.pending_approvals
    for request in held:
        decision = playback.decision(request.call)
        if isinstance(decision, Approved):
            await client.approve(decision.call_id)
        else:
            await client.deny(decision.call_id, decision.reason)
    owed = client.pending_tool_calls()
    for call in asked:
        if call.id in owed:
            told = playback.result(call)
            given = [told.output, *told.images] if told.images else told.output
            await client.add_tool_result(call.id, given, is_error=told.is_error)
    return bool(held or owed)


def _keyed(calls: Sequence[dict[str, Any]]) -> dict[str, CallKey]:
    """Recorded calls (journal form) by id: the name and arguments their answers are filed by."""
    return {call["id"]: (call["name"], call["arguments"]) for call in calls}


def _worded(effects: tuple[dict[str, Any], ...], call_id: str) -> str:
    """The result text a step's recorded `ToolResultReady` gave the call `call_id`."""
    for data in effects:
        notice = data.get("notice", {}) if data.get("type") == "Emit" else {}
        result = notice.get("result", {}) if notice.get("type") == "ToolResultReady" else {}
        if result.get("call_id") == call_id:
            return str(result.get("content", ""))
    return ""


__all__ = ["RecordedCall", "Recording", "RequestMismatch", "RetryPolicy"]
