"""Counterfactual rerun: a recorded session's prompts and decisions asked again under other options.

    result = await rerun("sessions.db", "abc", options=options_b, tools="recorded", into="abc-b")
    result.session.turns[-1].text, result.spent.cost, result.seconds

(Not `Recording.rerun`, shell/_recording.py, which asks a recorded session's
model requests again; this one asks its *prompts* again.) How it goes:

1. The original's prompts (with their images) and its approval decisions are
   read from the journal, in order, and so is every tool call that ran with its
   outcome: the recording (`ToolRecording`), keyed by the tool's name and the
   canonical JSON of the arguments.
2. A Client over the new session `into` (same journal) asks each prompt in
   turn. When a turn pauses for approval, each held call gets the original's
   next decision; with none left the rerun ends there, paused, as the original
   did.
3. Each tool call is served from the recording when one there has its name and
   canonical arguments (each recorded call serves once: the same call twice
   gives the two outputs in order). An unmatched call, by `tools`:
   "recorded" gets an error result saying no recording has it; "live" runs
   the real tool; "strict" stops the rerun (`RerunStopped`).

An agent run (a structured output) reruns through its definition (`agent=`):
its recorded prompt goes through `execute_agent`, its helpers served.
With "recorded" or "strict" the tools need not be importable: those of the
original the options do not give are offered as the recording declared them.
"live" needs them: a missing one is named (`ConfigError`). The new session
records where it came from (`SessionOrigin`, kind "rerun") and replays like any.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs
from returns.result import Failure, Result, Success

from toolreel.adapters import (
    Journal,
    JournalEntry,
    ModelPort,
    Session,
    SessionError,
    SessionNotFound,
    SessionOrigin,
    canonical_arguments,
    load_session,
)
from toolreel.core import (
    Approved,
    ConfigError,
    Denied,
    Finish,
    ImagePart,
    LoopConfig,
    PromptSubmitted,
    ToolCall,
    ToolFinished,
    ToolSpec,
)
from toolreel.core.budget import Spending
from toolreel.core.record import Value

from ._agent import AgentDefinition, execute_agent
from ._client import Client, open_journal
from ._errors import RerunStopped
from ._images import ToolOutput
from ._journal_files import journal_name
from ._options import AgentOptions
from ._replay import AgentSession, load_agent_session
from ._tools import Tool, registry

#: What an unmatched tool call gets: an error result, a live run, or the rerun's end.
ToolMode = Literal["recorded", "live", "strict"]
MODES: tuple[ToolMode, ...] = ("recorded", "live", "strict")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Outcome(Value):
    """A recorded tool run's outcome: its output (or error text) and images."""

    output: str
    is_error: bool = False
    images: tuple[ImagePart, ...] = ()


class ToolRecording:
    """The original's tool runs, served once each, in order, by (name, canonical arguments)."""

    def __init__(self, runs: Iterable[tuple[ToolCall, Outcome]]) -> None:
        """Keep each run's outcome under its call's key."""
        self._left: dict[tuple[str, str], deque[Outcome]] = {}
        for call, outcome in runs:
            key = (call.name, canonical_arguments(call.arguments))
            self._left.setdefault(key, deque()).append(outcome)
        self.served = 0
        self.unmatched: list[ToolCall] = []

    def take(self, call: ToolCall) -> Outcome | None:
        """The next recorded outcome of this call (consumed), or None (noted as unmatched)."""
        left = self._left.get((call.name, canonical_arguments(call.arguments)))
        if not left:
            self.unmatched.append(call)
            return None
        self.served += 1
        return left.popleft()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Original(Value):
    """What a rerun asks again: the prompts, the decisions, the tool runs, in order."""

    prompts: tuple[PromptSubmitted, ...]
    decisions: tuple[Approved | Denied, ...]
    runs: tuple[tuple[ToolCall, Outcome], ...]


def read_original(entries: Iterable[JournalEntry]) -> Original:
    """The prompts, decisions and tool runs (each call as it ran, with its outcome) of a
    session's steps."""
    prompts: list[PromptSubmitted] = []
    decisions: list[Approved | Denied] = []
    runs: list[tuple[ToolCall, Outcome]] = []
    started: dict[str, ToolCall] = {}
    for entry in entries:
        event = entry.event
        if isinstance(event, PromptSubmitted):
            prompts.append(event)
        elif isinstance(event, Approved | Denied):
            decisions.append(event)
        elif isinstance(event, ToolFinished) and event.call_id in started:
            call = started.pop(event.call_id)
            runs.append(
                (call, Outcome(output=event.output, is_error=event.is_error, images=event.images))
            )
        for data in entry.effects:
            if data.get("type") == "RunTool" and isinstance(data.get("call"), dict):
                made = data["call"]
                call = ToolCall(
                    id=str(made.get("id")),
                    name=str(made.get("name")),
                    arguments=str(made.get("arguments", "{}")),
                )
                started[call.id] = call
    return Original(prompts=tuple(prompts), decisions=tuple(decisions), runs=tuple(runs))


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ServedTool(Tool[..., Any]):
    """A tool whose calls the recording answers first; an unmatched one as `mode` says."""

    recording: ToolRecording
    mode: ToolMode
    #: The real tool ("live" runs it); None: only the recording's declaration is known.
    real: Tool[..., Any] | None = None

    async def run(self, arguments_json: str) -> Result[str | ToolOutput, str]:
        """The recorded outcome of the call; else an error result, a live run or a stop."""
        call = ToolCall(id="", name=self.name, arguments=arguments_json)
        outcome = self.recording.take(call)
        if outcome is not None:
            if outcome.is_error:
                return Failure(outcome.output)
            if outcome.images:
                return Success(ToolOutput(text=outcome.output, images=outcome.images))
            return Success(outcome.output)
        if self.mode == "live" and self.real is not None:
            return await self.real.run(arguments_json)
        if self.mode == "strict":
            raise RerunStopped(call)
        return Failure(
            f"no recording has a call of {self.name} with these arguments "
            f"({canonical_arguments(arguments_json)}): this rerun serves only recorded tool outputs"
        )


def _served(real: Tool[..., Any], recording: ToolRecording, mode: ToolMode) -> ServedTool:
    """A real tool (its spec and settings), served from the recording first."""
    fields = {field.name: getattr(real, field.name) for field in attrs.fields(Tool) if field.init}
    return ServedTool(recording=recording, mode=mode, real=real, **fields)


def _declared(
    spec: ToolSpec, approval: bool, recording: ToolRecording, mode: ToolMode
) -> ServedTool:
    """A tool known only by the recording's declaration of it (it is not importable here)."""

    def absent(arguments: dict[str, Any]) -> None:
        raise RuntimeError(f"tool {spec.name} is not importable here")  # never called: `run` is

    return ServedTool(
        name=spec.name,
        description=spec.description,
        parameters=json.loads(spec.parameters),
        handler=absent,
        argument_types={},
        takes_args_dict=True,
        requires_approval=approval,
        recording=recording,
        mode=mode,
    )


def served_tools(
    tools: Sequence[Any],
    original: LoopConfig,
    recording: ToolRecording,
    mode: ToolMode,
    besides: str | None = None,
) -> list[Tool[..., Any]]:
    """The rerun's tools: those given, served from the recording; when none are given, the
    original's (an agent's output tool `besides`), as the recording declared them ("live"
    needs them importable)."""
    given = registry(tools)
    if given:
        return [_served(item, recording, mode) for item in given.values()]
    declared = [spec for spec in original.tools if spec.name != besides]
    if mode == "live" and declared:
        missing = ", ".join(spec.name for spec in declared)
        raise ConfigError(
            "tools",
            missing,
            "the original's tools, importable, for a live rerun (pass options.tools)",
        )
    return [
        _declared(spec, spec.name in original.approval_required, recording, mode)
        for spec in declared
    ]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RerunResult(Value):
    """What a rerun made: the new session, what it spent, how long it took, how tools were served.

    Attributes:
        session_id: The new session's id (in the original's journal).
        session: The new session, rebuilt from the journal (an `AgentSession` for an
            agent run's rerun).
        original: The original session, as the journal holds it.
        finishes: Each turn's `Finish`, in order (a turn left paused for approval has none).
        spent: Tokens, model and tool calls, and cost (with the options' budget prices).
        seconds: Wall-clock time of the rerun.
        served: Tool calls answered from the recording.
        unmatched: Tool calls no recording had, by name and arguments (their ids are not
            kept): run live, or answered with an error.
        paused: The rerun ended with a turn paused for approval (the original had no more
            decisions).
    """

    session_id: str
    session: Session | AgentSession
    original: Session | AgentSession
    finishes: tuple[Finish, ...]
    spent: Spending
    seconds: float
    served: int
    unmatched: tuple[ToolCall, ...]
    paused: bool = False


async def rerun(
    journal: str | Path | Journal,
    session_id: str,
    *,
    options: AgentOptions,
    tools: ToolMode = "recorded",
    into: str,
    model: ModelPort | None = None,
    note: str | None = None,
    agent: AgentDefinition[Any, Any] | None = None,
) -> RerunResult:
    """Ask session `session_id`'s prompts again, with its decisions, under `options`, into `into`.

    See the module docstring. The options are used as given (their journal and
    session id aside): the model, provider, system prompt, tools and limits of the
    rerun; `toolreel rerun` fills what its flags leave out from the original.

    Args:
        journal: The journal holding the session (the rerun goes into it too).
        session_id: The session to rerun (a chat session, or an agent run with `agent`).
        options: The rerun's options (connection, tools, system prompt, limits).
        tools: What a tool call no recording has gets: "recorded" an error result, "live" a
            run of the real tool, "strict" the rerun's end (`RerunStopped`).
        into: The new session's id (not yet in the journal).
        model: A model port to use instead of the one the options describe.
        note: What changed, for the origin (default: the model and the tool mode).
        agent: For an agent run (a structured output), its definition: the recorded prompt
            goes through `execute_agent` with it, its helpers served from the recording
            (`options` then as `execute_agent` takes them: no tool-loop fields).

    Returns:
        The new session with what it spent and how long it took.

    Raises:
        RerunStopped: "strict", and a tool call no recording has (the session so far is kept).
        ConfigError: An unknown tool mode, "live" without the original's tools, or `agent`
            missing for an agent run (or given for a chat session).
        SessionError: `into` exists already.
    """
    if tools not in MODES:
        raise ConfigError("tools", tools, "'recorded', 'live' or 'strict'")
    store = open_journal(journal)
    try:
        original = _original(store, session_id, into)
        recording = ToolRecording(original.runs)
        if store.config(session_id).structured or agent is not None:
            return await _rerun_agent(
                store, session_id, into, agent, options, model, recording, tools, original, note
            )
        before = load_session(store, session_id)
        served = served_tools(options.tools, before.config, recording, tools)
        opts = attrs.evolve(
            options, tools=served, journal=store, session_id=into, auto_execute_tools=True
        )
        started = time.monotonic()
        client = Client(opts, model=model)
        why = note if note is not None else f"model {client.config.model}, tools {tools}"
        finishes, paused, spent = await _ask(
            client, store, original, SessionOrigin(kind="rerun", session_id=session_id, note=why)
        )
        seconds = time.monotonic() - started
        return RerunResult(
            session_id=into,
            session=load_session(store, into),
            original=before,
            finishes=finishes,
            spent=spent,
            seconds=seconds,
            served=recording.served,
            unmatched=tuple(recording.unmatched),
            paused=paused,
        )
    finally:
        if isinstance(journal, str | Path):
            store.close()


def _original(journal: Journal, session_id: str, into: str) -> Original:
    """The original's prompts, decisions and runs, once the ids are checked."""
    sessions = journal.sessions()
    if session_id not in sessions:
        raise SessionNotFound(session_id, journal_name(journal))
    if into in sessions:
        raise SessionError(f"session {into!r} already exists in {journal_name(journal)}")
    return read_original(journal.entries(session_id))


async def _rerun_agent(  # noqa: PLR0917 - rerun's arguments, passed on
    store: Journal,
    session_id: str,
    into: str,
    agent: AgentDefinition[Any, Any] | None,
    options: AgentOptions,
    model: ModelPort | None,
    recording: ToolRecording,
    mode: ToolMode,
    original: Original,
    note: str | None,
) -> RerunResult:
    """An agent run's prompt through `agent` (its helpers served), into `into`."""
    config = store.config(session_id)
    if agent is None or not config.structured:
        wanted = "the AgentDefinition of this agent run" if agent is None else "None: a chat's"
        raise ConfigError("agent", agent, wanted)
    before = load_agent_session(store, session_id)
    helpers = served_tools(agent.helpers, config, recording, mode, besides=agent.output.name)
    prompt = original.prompts[0] if original.prompts else PromptSubmitted(text="")
    definition = attrs.evolve(agent, build_prompt=lambda _input: prompt.text, helpers=helpers)
    opts = attrs.evolve(options, journal=None, session_id=None)
    why = note if note is not None else f"model {opts.connection.model_for(model)}, tools {mode}"
    started = time.monotonic()
    try:
        await execute_agent(
            definition,
            None,
            opts,
            model=model,
            journal=store,
            session_id=into,
            images=prompt.images or None,
        )
    finally:
        if into in store.sessions():
            store.set_origin(into, SessionOrigin(kind="rerun", session_id=session_id, note=why))
    seconds = time.monotonic() - started
    after = load_agent_session(store, into)
    return RerunResult(
        session_id=into,
        session=after,
        original=before,
        finishes=() if after.finish is None else (after.finish,),
        spent=after.state.spent,
        seconds=seconds,
        served=recording.served,
        unmatched=tuple(recording.unmatched),
        paused=bool(after.approvals),
    )


async def _ask(
    client: Client, journal: Journal, original: Original, origin: SessionOrigin
) -> tuple[tuple[Finish, ...], bool, Spending]:
    """Each prompt in turn, each held call decided as the original decided, in order."""
    decisions = deque(original.decisions)
    finishes: list[Finish] = []
    async with client:
        journal.set_origin(client.session_id, origin)
        for prompt in original.prompts:
            await client.query(prompt.text, images=prompt.images or None)
            finish = await client.wait()
            while finish is None and client.pending_approvals:
                if not decisions:
                    return tuple(finishes), True, client.spent
                for request in client.pending_approvals:
                    if not decisions:
                        break
                    decision = decisions.popleft()
                    if isinstance(decision, Denied):
                        await client.deny(request.call.id, decision.reason)
                    else:
                        await client.approve(request.call.id)
                finish = await client.wait()
            if finish is not None:
                finishes.append(finish)
        return tuple(finishes), False, client.spent
