"""`toolreel eval`: rerun recorded sessions against a change, check each, report (shell/_eval.py).

    toolreel eval sessions.db --model gpt-4o --expect same-answer --checks my_checks:polite \
        --report eval.html --min-pass 0.9 --concurrency 4

Built-in checks are `--expect SPEC` (repeatable): same-outcome, same-tools,
same-tool-calls, same-answer, contains:TEXT, equals:TEXT, regex:PATTERN,
tokens:+N / tokens:+P%, tool-calls:+N / tool-calls:+P%, cost:+USD / cost:+P%.
`--checks MODULE:FN` adds a function `check(original, candidate)` (or a list of
them). With neither, the check is same-outcome. The model, system prompt,
limits and budget of each rerun are the original's unless a flag gives them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import click
from rich.status import Status
from rich.table import Table
from rich.text import Text

from toolreel.adapters import Journal
from toolreel.core import LoopConfig
from toolreel.shell import AgentDefinition, evaluate
from toolreel.shell import checks as builtin
from toolreel.shell.checks import CaseResult, Check, EvalReport
from toolreel.shell.engine import DatabaseUrl

from . import (
    AGENT,
    CONNECTION,
    EXIT_FAILED,
    EXIT_OK,
    JOURNAL,
    TOOLS,
    _with,
    check_journal,
    session_in,
    writing,
)
from . import _render as render
from ._specs import imported
from ._whatif import _options, _session_flags, _tool_flags, agent_run

#: `--expect` names that take no value.
PLAIN = {
    "same-outcome": builtin.same_outcome,
    "same-tools": builtin.same_tools,
    "same-tool-calls": lambda: builtin.same_tools(arguments=True),
    "same-answer": builtin.same_answer,
}
#: `--expect NAME:TEXT` for the answer.
ANSWER = {"contains": builtin.contains, "equals": builtin.equals, "regex": builtin.matches}
#: `--expect NAME:+BOUND` for a delta.
DELTAS = {
    "tokens": builtin.token_delta,
    "tool-calls": builtin.tool_call_delta,
    "cost": builtin.cost_delta,
}
EXPECT_HELP = (
    "A built-in check (repeatable): same-outcome, same-tools, same-tool-calls, same-answer, "
    "contains:TEXT, equals:TEXT, regex:PATTERN (the final answer), tokens:+N, tool-calls:+N, "
    "cost:+USD (at most that much more than the original; +P% for a share, e.g. tokens:+20%)."
)


def expectation(spec: str) -> Check:
    """The built-in check `spec` names (`click.BadParameter` if none)."""
    if spec in PLAIN:
        return PLAIN[spec]()
    name, colon, value = spec.partition(":")
    try:
        if colon and name in ANSWER:
            return ANSWER[name](value)
        if colon and name in DELTAS:
            return _delta(name, value)
    except ValueError as exc:  # a ConfigError: a bad pattern or bound
        raise click.BadParameter(f"{spec!r}: {exc}") from exc
    names = ", ".join([*PLAIN, *(f"{key}:..." for key in [*ANSWER, *DELTAS])])
    raise click.BadParameter(f"{spec!r} is not a check ({names})")


def _delta(name: str, bound: str) -> Check:
    """`tokens:+500` (at most 500 more), `tokens:+20%` (at most 1.2 times)."""
    share = bound.endswith("%")
    amount = float(bound.removesuffix("%"))  # a ValueError: not a number
    if share:
        return DELTAS[name](max_ratio=1 + amount / 100)
    return DELTAS[name](max_increase=amount)


def _expectations(ctx: click.Context, param: click.Parameter, given: Sequence[str]) -> list[Check]:
    """Each `--expect` as its check."""
    return [expectation(spec) for spec in given]


def load_checks(spec: str) -> list[Check]:
    """The check function(s) `module:attr` names, found beside the working directory too."""
    value = imported(spec, "MODULE:FN")
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not items or not all(callable(item) and not isinstance(item, type) for item in items):
        raise click.BadParameter(f"{spec} is not a check function (or a list of them)")
    return items


def _user_checks(ctx: click.Context, param: click.Parameter, given: Sequence[str]) -> list[Check]:
    """Each `--checks` spec loaded."""
    return [item for spec in given for item in load_checks(spec)]


def _report_path(ctx: click.Context, param: click.Parameter, given: Path | None) -> Path | None:
    """`--report`: a .md or .html file."""
    if given is not None and given.suffix.lower() not in {".md", ".markdown", ".html", ".htm"}:
        raise click.BadParameter(f"{given}: a .md or .html file")
    return given


@click.command(name="eval")
@JOURNAL
@click.argument("sessions", nargs=-1, metavar="[SESSION]...")
@click.option("--system", metavar="TEXT", help="System prompt [default: each original's].")
@_with([option for option in CONNECTION if option is not TOOLS])
@click.option(
    "--tools",
    "tool_flags",
    multiple=True,
    metavar="recorded|live|strict|MODULE:ATTR",
    callback=_tool_flags,
    help="What a call no recording has gets (as rerun's: recorded, the default, live, strict); "
    "and the tools (MODULE:ATTR, repeatable).",
)
@click.option(
    "--expect", "expected", multiple=True, metavar="SPEC", callback=_expectations, help=EXPECT_HELP
)
@click.option(
    "--checks",
    "user_checks",
    multiple=True,
    metavar="MODULE:FN",
    callback=_user_checks,
    help="A check function check(original, candidate) -> bool | float | Verdict, or a list "
    "of them (repeatable).",
)
@click.option(
    "--report",
    type=click.Path(dir_okay=False, path_type=Path),
    callback=_report_path,
    metavar="FILE",
    help="Write the report there: Markdown (.md) or HTML (.html).",
)
@click.option(
    "--min-pass",
    type=click.FloatRange(0, 1),
    default=1.0,
    show_default=True,
    metavar="SHARE",
    help="Exit 1 when fewer sessions than this share pass.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    metavar="N",
    help="Sessions rerun at once, at most.",
)
@click.option(
    "--into-prefix",
    metavar="PREFIX",
    help="The candidates' id prefix, which names the eval: the same prefix again skips "
    "the candidates done [default: eval-MODEL/].",
)
@AGENT
@_session_flags
def eval_command(  # noqa: PLR0917 - click passes each flag
    journal: Path | DatabaseUrl,
    sessions: tuple[str, ...],
    tool_flags: tuple[str, list[Any]],
    expected: list[Check],
    user_checks: list[Check],
    report: Path | None,
    min_pass: float,
    concurrency: int,
    into_prefix: str | None,
    agent: AgentDefinition[Any, Any] | None,
    **params: Any,
) -> int:
    """Rerun recorded sessions against a change (model, prompt, tools) and check each.

    Each SESSION (default: every chat session that is not a fork or a rerun)
    is rerun as `toolreel rerun` does, into PREFIX + SESSION in the same
    journal; --expect and --checks judge each rerun against its original.
    Prints a table (each check, tokens, cost, tool calls, seconds) and a
    summary; exit 1 when the share of sessions passing is below --min-pass.
    Agent runs (structured outputs) are rerun through their definition,
    --agent MODULE:ATTR (then the default SESSIONs are the agent runs); their
    checks get two AgentSessions. Without it each is reported as not evaluated.
    """
    mode, params["tools"] = tool_flags
    prefix = into_prefix or (f"eval-{params['model']}/" if params["model"] else "eval/")
    check_journal(journal)
    store = writing(journal)
    try:
        ids = [_session(store, journal, given) for given in sessions] or _recorded(
            store, agent_runs=agent is not None
        )
        if not ids:
            raise click.UsageError(f"no sessions to evaluate in {journal}")

        def options_for(config: LoopConfig) -> Any:
            """A rerun's options: the flags given, the original's settings otherwise (an agent
            run's: none of the tool loop's)."""
            options = _options(dict(params), config, store)
            return agent_run(options) if config.structured else options

        known = [sid for sid in ids if sid in store.sessions()]
        if known:  # a flag the options refuse (no key, a bad limit) is a usage error, once
            options_for(store.config(known[0]))

        out, err = render.consoles()
        progress = _Progress(err, len(ids))
        try:
            result: EvalReport = anyio.run(
                lambda: evaluate(
                    store,
                    ids,
                    options_for,
                    checks=[*expected, *user_checks] or None,
                    tools=mode,  # type: ignore[arg-type]
                    into_prefix=prefix,
                    concurrency=concurrency,
                    on_case=progress.done,
                    agent=agent,
                )
            )
        finally:
            progress.stop()
    finally:
        store.close()
    show(result, out)
    if report is not None:
        text = result.html() if report.suffix.lower() in {".html", ".htm"} else result.markdown()
        report.write_text(text, encoding="utf-8")
        err.print(f"report: {report}")
    return EXIT_OK if result.pass_rate >= min_pass else EXIT_FAILED


def _recorded(journal: Journal, *, agent_runs: bool) -> list[str]:
    """The chat sessions (`agent_runs`: the agent runs) that are neither forks nor reruns (as
    `evaluate` picks them)."""
    return [
        session_id
        for session_id in journal.sessions()
        if journal.origin(session_id) is None
        and journal.config(session_id).structured is agent_runs
    ]


def _session(store: Journal, journal: Path | DatabaseUrl, given: str) -> str:
    """The id `given` names (a unique prefix will do); an unknown one as given, to report."""
    try:
        return session_in(store, journal, given)
    except click.ClickException:
        return given


class _Progress:
    """Shows "evaluating: 3/20 done" on stderr while the sessions run (on a terminal only)."""

    def __init__(self, err: Any, total: int) -> None:
        """Show the spinner, if stderr is a terminal."""
        self.total, self.count = total, 0
        self.status: Status | None = None
        if err.is_terminal:
            self.status = Status(self._label(), console=err, spinner="dots")
            self.status.start()

    def _label(self) -> str:
        """The line the spinner shows."""
        return f"evaluating: {self.count}/{self.total} done"

    def done(self, case: CaseResult) -> None:
        """One more session ended."""
        self.count += 1
        if self.status is not None:
            self.status.update(self._label())

    def stop(self) -> None:
        """Take the spinner away."""
        if self.status is not None:
            self.status.stop()


def show(report: EvalReport, out: Any) -> None:
    """The table, each failure, then the summary line."""
    header, rows = report.table()
    table = Table(*header, box=None, pad_edge=False)
    styles = {"pass": "green", "FAIL": "bold red", "ERROR": "bold red"}
    for cells in rows:
        table.add_row(*(Text(cell, style=styles.get(cell, "")) for cell in cells))
    out.print(table)
    for session, why in report.failures():
        out.print(Text.assemble((session, "bold"), ": ", render.one_line(why, 300)))
    out.print(report.summary())


COMMANDS: tuple[click.Command, ...] = (eval_command,)

__all__ = ["COMMANDS"]
