"""What if: `toolreel fork`, `toolreel rerun` and `toolreel diff` (shell/_fork.py, shell/_rerun.py,
adapters/_session_diff.py).

    toolreel fork sessions.db abc --at-round 2 --result call_7=42 --into abc-42 --tools my:TOOLS
    toolreel fork sessions.db run1 --at-round 1 --result call_2=7 --into run1-7 --agent my:AGENT
    toolreel rerun sessions.db abc --model gpt-4o --tools recorded --into abc-4o
    toolreel diff sessions.db abc abc-4o [--json]

Fork and rerun take the connection flags of `run`; the model, system prompt,
limits, sampling settings and budget are the original session's unless given.
The new session goes into the same journal. An agent run (a structured
output) forks through its definition (`--agent MODULE:ATTR`). Imported by the
package after its helpers are defined (their commands are registered there).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
import click

from toolreel.adapters import AgentOutput, AgentSession, Journal, Session, diff_sessions
from toolreel.core import AwaitApproval, Finish, LoopConfig, Phase
from toolreel.core.outcomes import FinishReason
from toolreel.shell import (
    AgentDefinition,
    AgentFailure,
    AgentFork,
    AgentOptions,
    Client,
    Edit,
    RerunResult,
    ToolMode,
    fork,
    rerun,
)
from toolreel.shell.engine import DatabaseUrl

from . import (
    AGENT,
    CONNECTION,
    EXIT_FAILED,
    EXIT_OK,
    JOURNAL,
    SETTINGS,
    TOOLS,
    _tools_option,
    _with,
    agent_options,
    check_key,
    reading,
    recorded,
    session_in,
    writing,
)
from . import _budget as budgets
from . import _render as render
from ._converse import EXIT_PAUSED, exit_code, follow, paused_note

#: The tool modes of a rerun (`--tools recorded|live|strict`).
MODES: tuple[str, ...] = typing.get_args(ToolMode)

INTO = click.option("--into", required=True, metavar="NEW", help="The new session's id.")


def _session_flags(command: Any) -> Any:
    """The flags fork and rerun share: the connection, limits, settings and budget."""
    flags = [
        click.option(
            "--max-iterations",
            type=click.IntRange(min=1),
            metavar="N",
            help="Model calls per turn at most [default: the original's].",
        ),
        *SETTINGS,
        *budgets.options(),
    ]
    return _with(flags)(command)


def _options(params: dict[str, Any], config: LoopConfig, journal: Journal) -> Any:
    """The options of the new session: the flags given, the original's settings otherwise."""
    params = {"no_stream": False, "session": None, "tool_call_recovery": None, **params}
    params = recorded(params, config)
    options = agent_options(params, journal)
    if params["model"] != "test":
        check_key(options, testable=False)
    return options


def _original(
    store: Journal, journal: Path | DatabaseUrl, session: str, *, agent: bool = False
) -> tuple[str, LoopConfig]:
    """The original's id (a unique prefix will do) and its config; an agent run needs
    `--agent` (`agent`), a chat session none."""
    sid = session_in(store, journal, session)
    config = store.config(sid)
    if config.structured and not agent:
        raise click.ClickException(
            f"session {sid} is an agent run: give its definition (--agent MODULE:ATTR)"
        )
    if agent and not config.structured:
        raise click.ClickException(f"session {sid} is a chat session, not an agent run: no --agent")
    return sid, config


def agent_run(options: AgentOptions) -> AgentOptions:
    """The options of an agent run: the connection, budget and journal of `options`, none of
    the tool loop's fields the command line sets (the definition has its own)."""
    default = AgentOptions()
    return attrs.evolve(
        options,
        system_prompt=None,
        tools=(),
        auto_execute_tools=default.auto_execute_tools,
        max_tool_iterations=default.max_tool_iterations,
    )


def _results(
    ctx: click.Context, param: click.Parameter, given: Sequence[str]
) -> tuple[tuple[str, str], ...]:
    """`--result CALL_ID=TEXT` pairs."""
    pairs = []
    for item in given:
        call_id, sep, text = item.partition("=")
        if not sep or not call_id:
            raise click.BadParameter(f"{item!r} is not CALL_ID=TEXT")
        pairs.append((call_id, text))
    return tuple(pairs)


@click.command(name="fork")
@JOURNAL
@click.argument("session")
@click.option("--at-turn", type=click.IntRange(min=1), metavar="T", help="The turn (1-based).")
@click.option(
    "--at-round",
    type=click.IntRange(min=1),
    metavar="N",
    help="The round of that turn the fork begins after (its next model call is live).",
)
@click.option(
    "--result",
    "results",
    multiple=True,
    metavar="CALL_ID=TEXT",
    callback=_results,
    help="Replace the result of a call of that round (`show --ids` shows ids). Repeatable.",
)
@click.option("--prompt", metavar="TEXT", help="The turn's prompt instead (with --at-turn alone).")
@click.option("--system", metavar="TEXT", help="The system prompt from the fork point on.")
@INTO
@_with(CONNECTION)
@AGENT
@_session_flags
def fork_command(  # noqa: PLR0917 - click passes each flag
    journal: Path | DatabaseUrl,
    session: str,
    at_turn: int | None,
    at_round: int | None,
    results: tuple[tuple[str, str], ...],
    prompt: str | None,
    into: str,
    agent: AgentDefinition[Any, Any] | None,
    **params: Any,
) -> int:
    """Fork a session at a turn or round, change what happened there, and go on live.

    The new session NEW holds the original's steps up to the fork point
    (checked as `replay` checks them), then the edit (--result, --prompt,
    --system), then the model's live answer with the connection and --tools
    given. The original is untouched; `toolreel show NEW` says where it came from.
    An agent run (a structured output) forks through its definition, --agent
    MODULE:ATTR (its helpers stand for --tools; --at-turn 1 is the run's start,
    --at-round N its Nth round); its output is printed as JSON.
    Exit codes as `run`'s (an agent run: 0 an output, 1 a failure).
    """
    system = params["system"]
    with reading(journal) as peek:
        sid, config = _original(peek, journal, session, agent=agent is not None)
    store = writing(journal)
    try:
        options = _options(params, config, store)
        edit = Edit(results=results, prompt=prompt, system=system)
        view = render.TurnView(*render.consoles())
        if agent is not None:
            handle = fork(
                store, sid, at_turn=at_turn, at_round=at_round, edit=edit, into=into,
                options=agent_run(options), agent=agent,
            )  # fmt: skip
            view.note(f"{into}: a fork of {sid}; going on live")
            return anyio.run(_agent_goes_on, handle, view, str(journal))
        client = fork(
            store, sid, at_turn=at_turn, at_round=at_round, edit=edit, into=into, options=options
        )
        view.note(f"{into}: a fork of {sid}; going on live")
        code: int = anyio.run(_go_on, client, view, str(journal))
        return code
    finally:
        store.close()


async def _agent_goes_on(handle: AgentFork[Any], view: render.TurnView, where: str) -> int:
    """Run the agent fork to its end; print its output (JSON) or its error; the exit code."""
    result = await handle.run()
    out, _ = render.consoles()
    if isinstance(result, AgentFailure):
        view.note(f"failed: {result.error.code}: {result.error.message}")
        code = EXIT_FAILED
    else:
        session = result.metadata.session()
        outcome = session.outcome
        out.print(getattr(outcome, "output", ""), markup=False, highlight=False)
        code = EXIT_OK
    view.note(f"session {handle.session_id} · {where}")
    return code


async def _go_on(client: Client, view: render.TurnView, where: str) -> int:
    """Follow the fork's live turn; the exit code (3: paused for approval)."""
    async with client:
        outcome: Finish | AwaitApproval | None = client.last_finish
        if client.pending_approvals:
            outcome = AwaitApproval(requests=client.pending_approvals)
        elif outcome is None and client.phase is not Phase.IDLE:
            outcome = await follow(client, view)
        if isinstance(outcome, AwaitApproval):
            paused_note(client, view, where)
        view.note(f"session {client.session_id} · {where}")
        return EXIT_OK if outcome is None else exit_code(outcome)


def _tool_flags(
    ctx: click.Context, param: click.Parameter, given: Sequence[str]
) -> tuple[str, list[Any]]:
    """`--tools`: a mode (recorded, live, strict: at most one) or MODULE:ATTR specs."""
    modes = [item for item in given if item in MODES]
    if len(modes) > 1:
        raise click.BadParameter(f"one tool mode at most, got {', '.join(modes)}")
    specs = [item for item in given if item not in MODES]
    return (modes[0] if modes else "recorded"), _tools_option(ctx, param, specs)


@click.command(name="rerun")
@JOURNAL
@click.argument("session")
@click.option("--system", metavar="TEXT", help="System prompt [default: the original's].")
@INTO
@_with([option for option in CONNECTION if option is not TOOLS])
@click.option(
    "--tools",
    "tool_flags",
    multiple=True,
    metavar="recorded|live|strict|MODULE:ATTR",
    callback=_tool_flags,
    help="What a call no recording has gets: an error result (recorded, the default), a "
    "live run (live), the rerun's end (strict); and the tools (MODULE:ATTR, repeatable; "
    "recorded and strict need none).",
)
@AGENT
@_session_flags
def rerun_command(
    journal: Path | DatabaseUrl,
    session: str,
    into: str,
    tool_flags: tuple[str, list[Any]],
    agent: AgentDefinition[Any, Any] | None,
    **params: Any,
) -> int:
    """Ask a session's prompts again, with its approvals, against another model or prompt.

    Each tool call whose name and arguments (canonically) match one of the
    recording gets the recorded output; --tools says what an unmatched one
    gets. The new session NEW goes into the journal; compare it with
    `toolreel diff JOURNAL SESSION NEW`. Exit codes: 0 every turn completed,
    1 one did not (or strict stopped), 3 the rerun ended paused for approval.
    An agent run (a structured output) reruns through its definition, --agent
    MODULE:ATTR (its helpers served); its output is printed as JSON (exit 1: it failed).
    """
    mode, params["tools"] = tool_flags
    with reading(journal) as peek:
        sid, config = _original(peek, journal, session, agent=agent is not None)
    store = writing(journal)
    try:
        options = _options(params, config, store)
        if agent is not None:
            options = agent_run(options)
        result: RerunResult = anyio.run(
            lambda: rerun(store, sid, options=options, tools=mode, into=into, agent=agent)  # type: ignore[arg-type]
        )
    finally:
        store.close()
    if agent is not None:
        return _agent_rerun(result, sid, into, mode)
    made, original = result.session, result.original
    assert isinstance(made, Session) and isinstance(original, Session)  # chat sessions only
    out, _ = render.consoles()
    for number, turn in enumerate(made.turns, start=1):
        out.print(f"turn {number}: {render.one_line(turn.text or '(no answer)', 200)}")
    spent = result.spent
    cost = f", ${spent.cost:.6f}" if spent.cost else ""
    out.print(
        f"{into}: a rerun of {sid} ({mode}): {result.served} call(s) served from the recording, "
        f"{len(result.unmatched)} unmatched; {spent.usage.total_tokens} tokens{cost}, "
        f"{result.seconds:.2f}s"
    )
    if result.paused:
        return EXIT_PAUSED
    done = all(finish.reason is FinishReason.COMPLETED for finish in result.finishes)
    return EXIT_OK if done and len(result.finishes) == len(original.turns) else EXIT_FAILED


def _agent_rerun(result: RerunResult, sid: str, into: str, mode: str) -> int:
    """An agent run's rerun, printed: its output (JSON) or error, then what was served."""
    out, _ = render.consoles()
    made = result.session
    outcome = made.outcome if isinstance(made, AgentSession) else None
    if isinstance(outcome, AgentOutput):
        out.print(outcome.output, markup=False, highlight=False)
    else:
        why = f"{outcome.code}: {outcome.message}" if outcome is not None else "no outcome"
        out.print(f"failed: {why}", markup=False, highlight=False)
    out.print(
        f"{into}: a rerun of {sid} ({mode}): {result.served} call(s) served from the recording, "
        f"{len(result.unmatched)} unmatched; {result.spent.usage.total_tokens} tokens, "
        f"{result.seconds:.2f}s",
        markup=False,
        highlight=False,
    )
    if result.paused:
        return EXIT_PAUSED
    return EXIT_OK if isinstance(outcome, AgentOutput) else EXIT_FAILED


@click.command(name="diff")
@JOURNAL
@click.argument("a")
@click.argument("b")
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
def diff_command(journal: Path | DatabaseUrl, a: str, b: str, as_json: bool) -> None:
    """Show where two sessions part and how each turn differs (a fork or rerun and its original).

    A and B are ids, or unique prefixes of them (an agent run compares as one turn whose
    answer is its output). Prints the first differing
    step, then per turn the answer (a unified diff), the tool calls added,
    removed or changed, the outcome and the usage, then the totals and cost.
    """
    with reading(journal) as store:
        first, second = session_in(store, journal, a), session_in(store, journal, b)
        diff = diff_sessions(first, second, journal=store)
    if as_json:
        click.echo(json.dumps(diff.data(), indent=2, ensure_ascii=False))
        return
    render.consoles()[0].print(render.diff_text(diff.text), end="")


COMMANDS: tuple[click.Command, ...] = (fork_command, rerun_command, diff_command)

__all__ = ["COMMANDS"]
