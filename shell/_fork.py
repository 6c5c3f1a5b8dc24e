"""Fork: a new session that shares a recorded one's steps up to a point, then goes its own way.

    client = fork("sessions.db", "abc", at_round=2, edit=Edit(results={"call_7": "42"}),
                  into="abc-42", options=options)
    async with client:
        finish = await client.wait()   # the model answers the edited round, live

The fork point is read off `toolreel show`: `at_turn=T` is the start of turn T
(its prompt may be edited), `at_round=N` the end of round N of that turn (one of
its tool results may be replaced). The new session is written to the same
journal before the Client opens it:

1. The original's steps before the fork point are folded through `step` again
   under their recorded configs and compared as `replay` compares them (a
   divergence raises `ReplayDiverged`, as `verify` would); they are copied as
   the journal holds them, byte for byte.
2. From the first step the edit changes (a replaced result's, the prompt's) up
   to the fork point, the original's events are folded again with the edit in
   place and journaled with what they now produce. The step that ends the fork
   point (the round's last result, or the prompt) folds under the config the
   fork goes on with — the options' (a changed system prompt included),
   journaled as a config change from that step, as a continued session's is —
   so the model call it makes is already the fork's.
3. The Client resumes the new session (`Client.resume`): what the fork point
   owes (that model call) is carried out live, with the options' connection and
   tools; approvals and everything else work as in any session.

The new session records where it came from (`SessionOrigin`, kind "fork"), and
replays like any session. The original is never written to.

An agent run (a structured output) forks through its definition (`agent=`, as
`rerun(agent=)` takes it): the fork point is the run's start (`at_turn=1`, the
prompt may be edited) or one of its rounds (the agent's iterations: a helper's
result may be replaced); the fork's config is the one `execute_agent` makes
of the definition and the options (`edit.system` replaces the definition's
system prompt), and `fork` returns an `AgentFork`: `await handle.run()` goes on
live as `execute_agent` resumes a run, and gives its `AgentSuccess` or
`AgentFailure`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

import attrs

from toolreel.adapters import (
    Journal,
    JournalEntry,
    ModelPort,
    SessionConfig,
    SessionError,
    SessionNotFound,
    SessionOrigin,
    Step,
)
from toolreel.adapters.redaction import Redactor
from toolreel.core import (
    ConfigError,
    Event,
    LoopConfig,
    PromptSubmitted,
    State,
    ToolFinished,
    ToolInterrupted,
    ToolTimedOut,
    checked_text,
    step,
    well_formed,
)
from toolreel.core.record import Value

from ._agent import AgentDefinition, AgentFailure, AgentSuccess, execute_agent, run_config
from ._client import Client, loop_config, open_journal
from ._journal_files import journal_name
from ._options import AgentOptions, AgentRunOptions
from ._replay import replay_until
from ._tools import registry

#: The events that carry a tool's outcome (the ones a replaced result stands for).
OUTCOMES = (ToolFinished, ToolTimedOut, ToolInterrupted)

T = TypeVar("T")


def _results(value: Mapping[str, str] | Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Replaced results as (call id, text) pairs, from a mapping or pairs."""
    pairs = tuple(value.items() if isinstance(value, Mapping) else value)
    for pair in pairs:
        if len(pair) != 2 or not all(isinstance(item, str) for item in pair):
            raise ConfigError("results", pair, "call ids mapped to result texts (str: str)")
        checked_text(f"results[{pair[0]!r}]")(None, None, pair[1])  # the caller's text
    return pairs


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Edit(Value):
    """What a fork changes at its fork point (nothing: the same point, gone on from live).

    Attributes:
        results: Tool results replaced, by call id (`toolreel show --ids` shows the ids):
            calls of the round the fork begins after.
        prompt: The text of the turn's prompt, for a fork at the start of a turn (its
            images stay).
        system: The system prompt from the fork point on.
    """

    results: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_results)
    prompt: str | None = attrs.field(default=None, validator=checked_text("prompt", optional=True))
    system: str | None = attrs.field(default=None, validator=checked_text("system", optional=True))

    def describe(self) -> str:
        """What the edit changes, in a phrase (the fork's origin note)."""
        parts = [f"result of {call_id} replaced" for call_id, _ in self.results]
        parts += ["prompt replaced"] if self.prompt is not None else []
        parts += ["system prompt replaced"] if self.system is not None else []
        return ", ".join(parts)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ForkPoint(Value):
    """Where a fork parts from its original, as steps of the original.

    Steps before `first` are copied; `first`..`last` are folded again with the
    edit; those after `switch` fold under the fork's config (`switch` is
    `last - 1`: the fork point's own step is the fork's).
    """

    first: int
    last: int
    turn: int
    round: int | None
    #: The original's events of `first`..`last`, in order.
    events: tuple[Event, ...]

    @property
    def switch(self) -> int:
        """The last step folded under the original's configs."""
        return self.last - 1


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AgentFork(Value, Generic[T]):
    """A fork of an agent run, written to the journal, not yet gone on: `await fork.run()`.

    Attributes:
        session_id: The fork's id in the journal.
        definition: The agent it goes on with (an edited system prompt in place).
        options: The options it goes on with (as `execute_agent` takes them).
        journal: The journal holding it.
        model: A model port to use instead of the one the options describe.
    """

    session_id: str
    definition: AgentDefinition[Any, T]
    options: AgentOptions
    journal: str | Path | Journal = attrs.field(eq=False, repr=False)
    model: ModelPort | None = attrs.field(default=None, eq=False, repr=False)

    async def run(self) -> AgentSuccess[T] | AgentFailure:
        """Go on live from the fork point to the run's end, as `execute_agent` resumes a run."""
        return await execute_agent(
            self.definition,
            None,
            attrs.evolve(self.options, journal=None, session_id=None),
            model=self.model,
            journal=self.journal,
            session_id=self.session_id,
        )


@overload
def fork(
    journal: str | Path | Journal,
    session_id: str,
    *,
    at_turn: int | None = None,
    at_round: int | None = None,
    edit: Edit | None = None,
    into: str,
    options: AgentOptions,
    model: ModelPort | None = None,
    agent: None = None,
) -> Client: ...


@overload
def fork(
    journal: str | Path | Journal,
    session_id: str,
    *,
    at_turn: int | None = None,
    at_round: int | None = None,
    edit: Edit | None = None,
    into: str,
    options: AgentOptions,
    model: ModelPort | None = None,
    agent: AgentDefinition[Any, T],
) -> AgentFork[T]: ...


def fork(
    journal: str | Path | Journal,
    session_id: str,
    *,
    at_turn: int | None = None,
    at_round: int | None = None,
    edit: Edit | None = None,
    into: str,
    options: AgentOptions,
    model: ModelPort | None = None,
    agent: AgentDefinition[Any, Any] | None = None,
) -> Client | AgentFork[Any]:
    """Write a fork of session `session_id` into the journal, and what goes on with it live.

    See the module docstring for what the new session holds. For a chat
    session, open the Client (`async with`) and read `wait()` or `events()`:
    the turn at the fork point goes on live; a fork at a round whose turn
    ended with it (a cap) is finished already (`wait()` gives None). For an
    agent run (`agent=`), `await fork(...).run()` gives the run's outcome.

    Args:
        journal: The journal holding the session (the fork goes into it too).
        session_id: The session to fork (a chat session, or an agent run with `agent`).
        at_turn: The turn of the fork point (1-based, as `toolreel show` numbers them):
            alone, its start; with `at_round`, the turn of that round (needed only when the
            session has several turns). An agent run has one turn.
        at_round: The round the fork begins after: its results are the recorded ones
            (those `edit.results` replaces aside), the next model call is live.
        edit: What changes at the fork point: tool results, the turn's prompt, the system
            prompt.
        into: The new session's id (not yet in the journal).
        options: The options the fork goes on with, as for `Client.resume`: the
            connection, the tools, the limits (`edit.system` replaces their system prompt).
            For an agent run, as `execute_agent` takes them (no tool-loop field set).
        model: A model port to use instead of the one the options describe.
        agent: For an agent run (a structured output), its definition: the fork goes on
            through it (its helpers, output tool, validators, attempts).

    Returns:
        A Client over the new session, not yet open; for an agent run an `AgentFork`,
        not yet run.

    Raises:
        ReplayDiverged: The original's steps before the fork point do not replay.
        ConfigError: No such turn or round, an edit that does not fit the fork point, a
            tool of the original the options (or the agent's helpers) do not give, or
            `agent` given for a chat session.
        SessionError: `into` exists already, or the session is an agent run and no `agent`
            is given.
    """
    edit = edit or Edit()
    if agent is not None:
        if edit.system is not None:
            agent = attrs.evolve(agent, system_prompt=edit.system)
        run_options = AgentRunOptions.of(attrs.evolve(options, journal=None, session_id=None))
        config = run_config(agent, run_options, registry(agent.helpers), model, into)
        where = _Where(journal, session_id, into, at_turn, at_round)
        _written(where, edit, config, run_options.connection.redactor(model), agent=True)
        return AgentFork(
            session_id=into, definition=agent, options=options, journal=journal, model=model
        )
    if options.mcp_servers:
        raise ConfigError("options.mcp_servers", options.mcp_servers, "none for a fork (yet)")
    if edit.system is not None:
        options = attrs.evolve(options, system_prompt=edit.system)
    config = loop_config(options, registry(options.tools), options.connection, model)
    where = _Where(journal, session_id, into, at_turn, at_round)
    _written(where, edit, config, options.connection.redactor(model), agent=False)
    return Client.resume(into, attrs.evolve(options, journal=journal), model=model)


@attrs.frozen(repr=False, eq=False)
class _Where(Value):
    """Which session forks where, into which new one."""

    journal: str | Path | Journal
    session_id: str
    into: str
    at_turn: int | None
    at_round: int | None


def _written(
    where: _Where, edit: Edit, config: LoopConfig, redact: Redactor, *, agent: bool
) -> None:
    """The fork written into the journal: the shared steps, the edited ones, its origin."""
    store = open_journal(where.journal)
    session_id, into = where.session_id, where.into
    try:
        _check_ids(store, session_id, into, agent=agent)
        _check_tools(store.config(session_id), config)
        point = locate(
            store.entries(session_id), at_turn=where.at_turn, at_round=where.at_round, edit=edit
        )
        events = tuple(redact.event(well_formed(event)) for event in _edited(point, edit))
        state, copied = replay_until(store, session_id, point.first - 1)
        configs = store.configs(session_id)
        steps = _refold(state, configs, point, events, config)
        _write(store, into, configs=configs, copied=copied, steps=steps, point=point, config=config)
        origin = SessionOrigin(
            kind="fork",
            session_id=session_id,
            seq=point.first - 1,
            turn=point.turn,
            round=point.round,
            note=edit.describe(),
        )
        store.set_origin(into, origin)
    finally:
        if isinstance(where.journal, str | Path):
            store.close()


def _check_ids(journal: Journal, session_id: str, into: str, *, agent: bool) -> None:
    """The original must be a session of the journal of the kind forked (an agent run with
    `agent`), and `into` a new id."""
    sessions = journal.sessions()
    if session_id not in sessions:
        raise SessionNotFound(session_id, journal_name(journal))
    if into in sessions:
        raise SessionError(f"session {into!r} already exists in {journal_name(journal)}")
    structured = journal.config(session_id).structured
    if structured and not agent:
        raise SessionError(
            f"session {session_id!r} is an agent run: fork it with its definition (agent=)"
        )
    if agent and not structured:
        raise ConfigError("agent", session_id, "None: the session is a chat's, not an agent run")


def _check_tools(original: LoopConfig, config: LoopConfig) -> None:
    """The fork goes on with the original's tools: each must be given (importable here)."""
    given = {spec.name for spec in config.tools}
    missing = [spec.name for spec in original.tools if spec.name not in given]
    if missing:
        raise ConfigError(
            "tools", ", ".join(missing), "the original's tools, given (importable) for the fork"
        )


def locate(
    entries: Iterable[JournalEntry],
    *,
    at_turn: int | None,
    at_round: int | None,
    edit: Edit,
) -> ForkPoint:
    """The fork point `at_turn` / `at_round` name in the original's steps, the edit checked
    against it (`ConfigError` naming what does not fit)."""
    if at_turn is None and at_round is None:
        raise ConfigError("at_round", None, "a fork point: at_turn=T, at_round=N, or both")
    if edit.results and at_round is None:
        raise ConfigError("edit.results", dict(edit.results), "a fork at_round=N: results of it")
    if edit.prompt is not None and at_round is not None:
        raise ConfigError(
            "edit.prompt", edit.prompt, "a fork at the start of a turn: at_turn alone"
        )
    scan = _Scan(at_turn or 1, at_round)
    for entry in entries:
        if scan.see(entry) and at_turn is not None:
            break  # without at_turn, every turn is counted: a round needs it if there are several
    return scan.point(edit, at_turn)


class _Scan:
    """Reads the original's steps until the fork point: turns, rounds, and results by call."""

    def __init__(self, turn: int, round_number: int | None) -> None:
        """Looking for round `round_number` of turn `turn` (None: the turn's start)."""
        self.turn = turn
        self.round = round_number
        self.turns = 0
        self.rounds = 0
        self.start: int | None = None  # the seq of the turn's prompt
        self.end: int | None = None  # the seq of the step that ends the fork point
        self.calls: list[dict[str, Any]] = []  # the round's results as recorded
        self.outcomes: dict[str, int] = {}  # call id -> the seq of its outcome, this turn
        self.events: dict[int, Event] = {}  # the turn's events by seq

    def see(self, entry: JournalEntry) -> bool:
        """Note one step; True once the fork point is found (later steps count turns only)."""
        event = entry.event
        if self.end is not None:
            self.turns += isinstance(event, PromptSubmitted)
            return True
        if isinstance(event, PromptSubmitted):
            self.turns += 1
            self.rounds = 0
            if self.turns == self.turn:
                self.start = entry.seq
                if self.round is None:
                    self.end = entry.seq
                    self.events[entry.seq] = event
                    return True
        if self.turns != self.turn:
            return self.turns > self.turn
        self.events[entry.seq] = event
        if isinstance(event, OUTCOMES):
            self.outcomes.setdefault(event.call_id, entry.seq)
        for data in entry.effects:
            notice = data.get("notice", {}) if data.get("type") == "Emit" else {}
            if notice.get("type") == "RoundFinished":
                self.rounds += 1
                if self.rounds == self.round:
                    self.end = entry.seq
                    self.calls = list(notice.get("round", {}).get("results", ()))
                    return True
        return False

    def point(self, edit: Edit, at_turn: int | None) -> ForkPoint:
        """The fork point found (`ConfigError` if there is none, or the edit does not fit)."""
        if self.start is None:
            raise ConfigError("at_turn", self.turn, f"a turn of the session (it has {self.turns})")
        if at_turn is None and self.turns > 1 and self.round is not None:
            raise ConfigError("at_turn", None, "the turn of the round: the session has several")
        if self.end is None:
            detail = f"a round that turn {self.turn} completed (it completed {self.rounds})"
            raise ConfigError("at_round", self.round, detail)
        first = self.end
        for call_id, _ in edit.results:
            first = min(first, self._outcome(call_id))
        events = tuple(self.events[seq] for seq in range(first, self.end + 1))
        return ForkPoint(
            first=first, last=self.end, turn=self.turn, round=self.round, events=events
        )

    def _outcome(self, call_id: str) -> int:
        """The seq of the tool's outcome for `call_id`, a call of the round that ran."""
        recorded = {result.get("call_id"): result for result in self.calls}
        if call_id not in recorded:
            known = ", ".join(str(key) for key in recorded) or "none"
            raise ConfigError(
                "edit.results", call_id, f"a call of round {self.round} (its calls: {known})"
            )
        reason = recorded[call_id].get("reason")
        if call_id not in self.outcomes or reason is not None:
            why = f"the loop's own ({reason})" if reason else "not a tool's output"
            raise ConfigError("edit.results", call_id, f"a call that ran: its result is {why}")
        return self.outcomes[call_id]


def _edited(point: ForkPoint, edit: Edit) -> tuple[Event, ...]:
    """The original's events of the fork point with the edit in place."""
    return tuple(_edited_event(event, dict(edit.results), edit.prompt) for event in point.events)


def _edited_event(event: Event, replaced: dict[str, str], prompt: str | None) -> Event:
    """One event with the edit in place: a replaced result, a replaced prompt."""
    if isinstance(event, OUTCOMES) and event.call_id in replaced:
        return ToolFinished(call_id=event.call_id, output=replaced[event.call_id])
    if isinstance(event, PromptSubmitted) and prompt is not None:
        return PromptSubmitted(text=prompt, images=event.images)
    return event


def _refold(
    state: State,
    configs: list[tuple[int, SessionConfig]],
    point: ForkPoint,
    events: tuple[Event, ...],
    config: LoopConfig,
) -> list[Step]:
    """The fork point's steps: the (edited) events folded under the original's configs up to
    `point.switch`, the last one under the fork's."""
    steps = []
    for seq, event in zip(range(point.first, point.last + 1), events, strict=True):
        if seq > point.switch:
            state = attrs.evolve(state, config=config)
        else:
            state = attrs.evolve(state, config=_config_at(configs, seq))
        state, effects = step(state, event)
        steps.append(Step(seq=seq, event=event, effects=effects))
    return steps


def _config_at(configs: list[tuple[int, SessionConfig]], seq: int) -> SessionConfig:
    """The config the original recorded for step `seq` (each applies after its from_seq)."""
    found = configs[0][1]
    for from_seq, config in configs:
        if seq > from_seq:
            found = config
    return found


def _write(
    journal: Journal,
    into: str,
    *,
    configs: list[tuple[int, SessionConfig]],
    copied: list[JournalEntry],
    steps: list[Step],
    point: ForkPoint,
    config: LoopConfig,
) -> None:
    """The new session: the original's configs and steps up to the switch, then the fork's."""
    switch = point.switch
    before = [(seq, old) for seq, old in configs if seq < switch or seq == 0]
    lease = None
    for from_seq, old in before if switch > 0 else ():
        if lease is not None:
            journal.release(lease)
        lease = journal.begin(into, old, from_seq=from_seq)
    try:
        if copied:
            journal.append_entries(into, copied)
        shared = [item for item in steps if item.seq <= switch]
        if shared:
            journal.append(into, shared)
        if lease is not None:
            journal.release(lease)
        lease = journal.begin(into, config, from_seq=switch)
        journal.append(into, [item for item in steps if item.seq > switch])
    finally:
        if lease is not None:
            journal.release(lease)
