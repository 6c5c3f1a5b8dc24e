"""Evaluate a change against recorded sessions: rerun each under new options, check each rerun.

    report = await evaluate("sessions.db", None, options_b, checks=[checks.same_outcome()])
    report.pass_rate, report.markdown()

How it goes, per session (several at once, at most `concurrency`):

1. The candidate's id is `into_prefix + session_id` (default prefix
   "eval-MODEL/"): the same eval run again finds it. A candidate already there
   and complete (every prompt asked, or ended paused for approval as a rerun
   does; no turn cut short) is not rerun, only checked again (`resumed`); one there but unfinished
   (an eval interrupted, a strict rerun stopped) or made with another model or
   system prompt is reported, not overwritten.
2. Otherwise the session is rerun (`rerun`, shell/_rerun.py) into the candidate
   id, its tool calls served from the recording as `tools` says; the origin's
   note names the eval.
3. Each check judges (original, candidate) (`judge`, shell/_verdict.py): a
   check that fails or raises fails that session, never the eval. An unknown
   session, a rerun that raises: that session's `error`.

Agent runs (structured outputs) are evaluated given their definition
(`agent=`): each is rerun through it (`rerun(agent=)`) and its checks get the
two `AgentSession`s (the built-in ones compare outcomes and output JSON);
without it an agent run is that session's `error`. The default sessions are
the agent runs with `agent=`, the chat sessions without.

Nothing about a session stops the others; `on_case` hears each as it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs

from toolreel.adapters import AgentSession, Journal, load_session
from toolreel.core import ConfigError, LoopConfig, Phase
from toolreel.core.outcomes import FinishReason
from toolreel.core.record import Value

from ._agent import AgentDefinition
from ._client import open_journal
from ._options import AgentOptions
from ._replay import load_agent_session
from ._rerun import MODES, ToolMode, rerun
from ._verdict import (
    Check,
    Judged,
    SameOutcome,
    Verdict,
    check_name,
    cost_of,
    judge,
    tool_calls,
)

#: The options of every rerun, or a function of the original's config giving them.
OptionsFor = AgentOptions | Callable[[LoopConfig], AgentOptions]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CaseResult(Value):
    """One session evaluated: its candidate, each check's verdict, or why it could not be.

    Attributes:
        session_id: The recorded session.
        candidate_id: Its rerun (in the same journal).
        verdicts: Each check's name and verdict, in the order the checks were given.
        error: Why the session could not be evaluated (unknown, an agent run without its
            definition, the rerun failed or stopped); None when it was.
        resumed: The candidate was there already (an earlier run of the eval): checked again,
            not rerun.
        seconds: The rerun's wall-clock time (None: resumed, or not rerun).
        original: The recorded session (None: unknown); an `AgentSession` for an agent run.
        candidate: The rerun (None: there is none to check); an `AgentSession` for an
            agent run.
        cost: Each session's cost in USD (None: no price for its model).
    """

    session_id: str
    candidate_id: str
    verdicts: tuple[tuple[str, Verdict], ...] = ()
    error: str | None = None
    resumed: bool = False
    seconds: float | None = None
    original: Judged | None = None
    candidate: Judged | None = None
    cost: tuple[float | None, float | None] = (None, None)

    @property
    def passed(self) -> bool:
        """Evaluated, and every check passed."""
        return self.error is None and all(verdict.passed for _, verdict in self.verdicts)

    @property
    def tokens(self) -> tuple[int, int] | None:
        """Tokens (in + out) of the original and the candidate."""
        if self.original is None or self.candidate is None:
            return None
        return self.original.usage.total_tokens, self.candidate.usage.total_tokens

    @property
    def tool_calls(self) -> tuple[int, int] | None:
        """Tool calls the model made in the original and in the candidate."""
        if self.original is None or self.candidate is None:
            return None
        return len(tool_calls(self.original)), len(tool_calls(self.candidate))

    def failures(self) -> list[str]:
        """Why it failed, a line each: the error, or each failed check and its reason."""
        if self.error is not None:
            return [self.error]
        return [
            f"{name}: {verdict.reason}" if verdict.reason else name
            for name, verdict in self.verdicts
            if not verdict.passed
        ]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class EvalReport(Value):
    """An evaluation: a `CaseResult` per session, in the order the sessions were given.

    Attributes:
        name: The candidates' id prefix (it names the eval).
        model: The model the candidates asked (of the first session rerun; "" if none was).
        tools: The tool mode of the reruns.
        checks: The checks' names, in order.
        cases: Each session's result.
    """

    name: str
    model: str
    tools: ToolMode
    checks: tuple[str, ...]
    cases: tuple[CaseResult, ...]

    @property
    def passed(self) -> int:
        """Sessions that passed every check."""
        return sum(case.passed for case in self.cases)

    @property
    def failed(self) -> int:
        """Sessions that failed a check or could not be evaluated."""
        return len(self.cases) - self.passed

    @property
    def pass_rate(self) -> float:
        """The share of sessions that passed (1.0 for no sessions)."""
        return self.passed / len(self.cases) if self.cases else 1.0

    def table(self) -> tuple[list[str], list[list[str]]]:
        """The table as text: its header (session, each check, tokens, cost, tool calls,
        seconds, result) and a row per session."""
        from ._eval_report import header, row  # noqa: PLC0415 - the renderer needs this class

        return header(self), [row(case, self.checks) for case in self.cases]

    def summary(self) -> str:
        """One line: how many passed, the share, the candidates, the model, the tool mode."""
        from ._eval_report import summary  # noqa: PLC0415 - the renderer needs this class

        return summary(self)

    def failures(self) -> list[tuple[str, str]]:
        """(session, why) for each failed check and each session not evaluated."""
        return [(case.session_id, line) for case in self.cases for line in case.failures()]

    def markdown(self) -> str:
        """The report as Markdown: a summary, the table, then each failure."""
        from ._eval_report import markdown  # noqa: PLC0415 - the renderer needs this class

        return markdown(self)

    def html(self) -> str:
        """The report as a standalone HTML page (every text escaped)."""
        from ._eval_report import html  # noqa: PLC0415 - the renderer needs this class

        return html(self)


async def evaluate(
    journal: str | Path | Journal,
    sessions: Iterable[str] | None,
    options: OptionsFor,
    *,
    checks: Sequence[Check] | None = None,
    tools: ToolMode = "recorded",
    into_prefix: str | None = None,
    concurrency: int = 4,
    on_case: Callable[[CaseResult], object] | None = None,
    agent: AgentDefinition[Any, Any] | None = None,
) -> EvalReport:
    """Rerun each session under `options` and check each rerun against its original.

    See the module docstring.

    Args:
        journal: The journal holding the sessions (the candidates go into it too).
        sessions: The sessions' ids (each once); None: every chat session of the journal
            that is not itself a fork or a rerun (with `agent`: every such agent run).
        options: The reruns' options (model, connection, tools, system prompt, limits,
            budget), or a function of each original's config giving them.
        checks: The checks (toolreel.shell.checks, or functions `check(original,
            candidate)`); None: `checks.same_outcome()` alone.
        tools: What a tool call no recording has gets (as `rerun`'s `tools`).
        into_prefix: The candidates' id prefix (default "eval-MODEL/"; needed when
            `options` is a function).
        concurrency: Sessions rerun at once, at most.
        on_case: Called with each session's result as it ends (for progress).
        agent: The definition agent runs (structured outputs) are rerun through, as
            `rerun(agent=)` takes it (`options` then as `execute_agent` takes them); their
            checks get two `AgentSession`s.

    Returns:
        The report: each session's verdicts, deltas and errors.

    Raises:
        ConfigError: An unknown tool mode, a concurrency below 1, or no prefix for
            options given as a function.
    """
    if tools not in MODES:
        raise ConfigError("tools", tools, "'recorded', 'live' or 'strict'")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError("concurrency", concurrency, "an int ≥ 1")
    if into_prefix is None:
        if not isinstance(options, AgentOptions):
            raise ConfigError("into_prefix", None, "a prefix, when options is a function")
        into_prefix = f"eval-{options.model or 'default'}/"
    given = tuple(checks) if checks is not None else (SameOutcome(),)
    named = tuple(zip(_names(given), given, strict=True))
    store = open_journal(journal)
    try:
        if sessions is not None:
            ids = list(dict.fromkeys(sessions))
        else:
            ids = recorded_sessions(store, agent_runs=agent is not None)
        run = _Run(store, options, named, tools, into_prefix, agent=agent)
        results: list[CaseResult | None] = [None] * len(ids)
        limiter = anyio.CapacityLimiter(concurrency)

        async def one(index: int, session_id: str) -> None:
            async with limiter:
                case = await run.case(session_id)
            results[index] = case
            if on_case is not None:
                on_case(case)

        async with anyio.create_task_group() as group:
            for index, session_id in enumerate(ids):
                group.start_soon(one, index, session_id)
    finally:
        if isinstance(journal, str | Path):
            store.close()
    cases = tuple(case for case in results if case is not None)
    return EvalReport(
        name=into_prefix,
        model=run.model,
        tools=tools,
        checks=tuple(name for name, _ in named),
        cases=cases,
    )


def recorded_sessions(journal: Journal, *, agent_runs: bool = False) -> list[str]:
    """The journal's chat sessions (`agent_runs`: its agent runs) that are neither forks nor
    reruns, in its order."""
    return [
        session_id
        for session_id in journal.sessions()
        if journal.origin(session_id) is None
        and journal.config(session_id).structured is agent_runs
    ]


def _names(checks: Sequence[Check]) -> list[str]:
    """Each check's name, made unique ("contains 'x'", "contains 'x' #2")."""
    names: list[str] = []
    for check in checks:
        name, again = check_name(check), 1
        while name in names:
            again += 1
            name = f"{check_name(check)} #{again}"
        names.append(name)
    return names


def _complete(original: Judged, candidate: Judged) -> bool:
    """Whether a candidate is a whole rerun: every prompt asked (or ended paused for
    approval, as a rerun does), no turn cut short (a strict stop, an interruption: a
    cancelled turn where the original's was not); an agent run: ended, or paused."""
    if isinstance(candidate, AgentSession) or isinstance(original, AgentSession):
        return isinstance(candidate, AgentSession) and (
            candidate.finish is not None or bool(candidate.approvals)
        )
    cut = any(
        turn.reason is FinishReason.CANCELLED and was.reason is not FinishReason.CANCELLED
        for turn, was in zip(candidate.turns, original.turns, strict=False)
    )
    if cut:
        return False
    return candidate.phase is Phase.AWAITING_APPROVAL or (
        candidate.phase is Phase.IDLE and len(candidate.turns) >= len(original.turns)
    )


class _Run:
    """One evaluation's settings, and each session evaluated under them."""

    def __init__(
        self,
        journal: Journal,
        options: OptionsFor,
        checks: tuple[tuple[str, Check], ...],
        tools: ToolMode,
        prefix: str,
        *,
        agent: AgentDefinition[Any, Any] | None = None,
    ) -> None:
        """Keep the settings; no model asked yet."""
        self.agent = agent
        self.journal = journal
        self.options = options
        self.checks = checks
        self.tools = tools
        self.prefix = prefix
        self.model = ""

    async def case(self, session_id: str) -> CaseResult:
        """One session: its candidate (made now, or found) and the checks' verdicts."""
        into = self.prefix + session_id
        result = CaseResult(session_id=session_id, candidate_id=into)
        if session_id not in self.journal.sessions():
            return attrs.evolve(result, error=f"no session {session_id!r} in the journal")
        structured = self.journal.config(session_id).structured
        if structured and self.agent is None:
            return attrs.evolve(
                result,
                error=f"session {session_id!r} is an agent run: give its definition "
                "(agent=, --agent MODULE:ATTR) to evaluate it",
            )
        try:
            original = self._load(session_id)
            result = attrs.evolve(result, original=original)
            options = self.options
            if not isinstance(options, AgentOptions):
                options = options(self.journal.config(session_id))
            if into in self.journal.sessions():
                result = self._found(result, original, into, options)
            else:
                result = await self._rerun(result, session_id, into, options)
        except Exception as exc:  # one session's trouble (RerunStopped too) is reported with it
            return attrs.evolve(result, error=str(exc) or type(exc).__name__)
        if result.error is not None or result.candidate is None:
            return result
        return await self._check(result, original, result.candidate)

    def _load(self, session_id: str) -> Judged:
        """A session as the journal holds it: an agent run's as an `AgentSession`."""
        if self.journal.config(session_id).structured:
            return load_agent_session(self.journal, session_id)
        return load_session(self.journal, session_id)

    def _found(
        self, result: CaseResult, original: Judged, into: str, options: AgentOptions
    ) -> CaseResult:
        """A candidate an earlier run made: checked again if complete and made with these
        options' model and system prompt (an agent run's: its definition's), else reported."""
        candidate = self._load(into)
        origin = candidate.origin
        if origin is None or origin.kind != "rerun" or origin.session_id != original.session_id:
            return attrs.evolve(
                result, error=f"session {into!r} exists and is not a rerun of {original.session_id}"
            )
        made = candidate.config
        system = options.system_prompt
        if isinstance(original, AgentSession) and self.agent is not None:
            system = self.agent.system_prompt
        if (options.model and made.model != options.model) or made.system_prompt != system:
            return attrs.evolve(
                result,
                error=f"{into} was made with another model or system prompt "
                f"({made.model!r}): evaluate under another prefix",
            )
        if not _complete(original, candidate):
            return attrs.evolve(
                result,
                error=f"{into} did not finish (an earlier eval was interrupted, or a strict "
                "rerun stopped): evaluate again under another prefix",
            )
        self.model = self.model or made.model
        return attrs.evolve(result, candidate=candidate, resumed=True)

    async def _rerun(
        self, result: CaseResult, session_id: str, into: str, options: AgentOptions
    ) -> CaseResult:
        """Rerun the session into the candidate's id; how long it took."""
        note = f"eval {self.prefix}: model {options.model or 'default'}, tools {self.tools}"
        agent = self.agent if self.journal.config(session_id).structured else None
        made = await rerun(
            self.journal,
            session_id,
            options=options,
            tools=self.tools,
            into=into,
            note=note,
            agent=agent,
        )
        self.model = self.model or made.session.config.model
        return attrs.evolve(result, candidate=made.session, seconds=made.seconds)

    async def _check(self, result: CaseResult, original: Judged, candidate: Judged) -> CaseResult:
        """Each check's verdict, and what each session cost."""
        verdicts = [(name, await judge(check, original, candidate)) for name, check in self.checks]
        cost = (cost_of(original, candidate.config.budget), cost_of(candidate))
        return attrs.evolve(result, verdicts=tuple(verdicts), cost=cost)
