"""The `toolreel` command: run prompts with tools, then inspect, verify and move journaled sessions.

    toolreel run "What is 25 plus 17?" --tools mytools:TOOLS --journal sessions.db
    toolreel sessions sessions.db   toolreel show sessions.db SESSION   toolreel replay sessions.db

Exit codes: 0 success; 1 a turn that did not complete, a divergence, another
failure; 2 a usage error; 3 a turn left paused for approval; 130 Ctrl-C.
Errors are one line on stderr, `error: ...` (TOOLREEL_DEBUG=1 shows the
traceback of an unexpected one).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
import click

from toolreel.adapters import (
    PROVIDERS,
    Journal,
    api_key,
    codec_for,
    load_session,
    render_agent_transcript,
    render_transcript,
)
from toolreel.adapters.providers import (
    DEFAULT_MODELS,
    RECOVERY_MODES,
    environment_keys,
    require_key,
)
from toolreel.adapters.redaction import LOG_FILTER, is_dsn
from toolreel.core import ConfigError, ImagePart, LoopConfig, ToolreelError, UsageError
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    Divergence,
    Tool,
    export_session,
    image,
    import_session,
    load_agent_session,
)
from toolreel.shell import demo as demo_module
from toolreel.shell import replay as replay_session
from toolreel.shell.engine import (
    DatabaseUrl,
    cost_of,
    is_sqlite,
    open_location,
    session_price,
    submitted,
    tools_from_spec,
)

from . import _budget as budgets
from . import _context as context
from . import _converse as live
from . import _fallback as fallback
from . import _mcp as mcp
from . import _render as render
from . import _serve as serving
from . import _temporal as temporal_cli
from ._specs import imported

#: The command (the click group) and the console script's entry point; the rest is its own.
__all__ = ["cli", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
PROVIDER = click.Choice(sorted(PROVIDERS))
PROVIDER_HELP = (
    "Wire format [default: openai, for any OpenAI-compatible server; or TOOLREEL_PROVIDER]."
)
MODEL_HELP = (
    "Model [default: gpt-4o-mini, ... per provider; required with --base-url]; "
    '"test": a stand-in that calls each tool once (no key, no server). Or TOOLREEL_MODEL.'
)
URL_HELP = (
    "Any server, e.g. Ollama's http://127.0.0.1:11434/v1 or LM Studio's (or TOOLREEL_BASE_URL)."
)
JOURNAL_HELP = (
    "Keep the session in FILE: SQLite, or JSON lines if it ends .jsonl; "
    "or in PostgreSQL: postgresql://user:password@host/db (pip install 'toolreel[postgres]')."
)
MAX_HELP = "Model calls per turn at most, 5 by default."
#: `--tool-call-recovery`, for run, chat and serve.
RECOVERY: Callable[[Any], Any] = click.option(
    "--tool-call-recovery",
    type=click.Choice(RECOVERY_MODES),
    help="Make tool calls a local model writes as text real calls (openai, ollama).",
)


class JournalLocation(click.ParamType):  # type: ignore[type-arg]
    """A journal file (a Path), or a `postgresql://` URL (kept as a `DatabaseUrl`)."""

    name = "journal"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The URL as a `DatabaseUrl` (shown with its password masked), else a checked Path."""
        if isinstance(value, DatabaseUrl) or is_dsn(value):
            return value if isinstance(value, DatabaseUrl) else DatabaseUrl(value)
        return click.Path(dir_okay=False, path_type=Path).convert(value, param, ctx)


JOURNAL_TYPE: JournalLocation = JournalLocation()
#: A journal argument: a file is checked before it is opened, so reading never creates it.
JOURNAL = click.argument("journal", type=JOURNAL_TYPE)


class ToolreelGroup(click.Group):
    """A click group whose errors are one line on stderr, `error: ...`, never a traceback."""

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> Any:
        """Run the command; map errors to one line and an exit code (2 usage, 1 failure)."""
        standalone_mode = extra.pop("standalone_mode", True)
        try:
            code = super().main(args, prog_name, standalone_mode=False, **extra)
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
            code = _fail(exc.format_message() + hint, EXIT_USAGE)
        except click.ClickException as exc:
            code = _fail(exc.format_message(), exc.exit_code)
        except click.Abort:
            code = _fail("interrupted", EXIT_INTERRUPTED)
        except (ToolreelError, BaseExceptionGroup) as exc:
            error = user_error(exc)
            if error is None or os.environ.get("TOOLREEL_DEBUG"):
                raise
            code = _fail(str(error), EXIT_USAGE if isinstance(error, UsageError) else EXIT_FAILED)
        except (OSError, sqlite3.Error) as exc:
            if os.environ.get("TOOLREEL_DEBUG"):
                raise
            code = _fail(str(exc) or type(exc).__name__, EXIT_FAILED)
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else EXIT_OK)


def user_error(exc: BaseException) -> ToolreelError | None:
    """The toolreel error `exc` is, or the first one a group of them holds (None: a bug)."""
    if isinstance(exc, ToolreelError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        found = [user_error(inner) for inner in exc.exceptions]
        if found and all(found):
            return found[0]
    return None


def _fail(message: str, code: int) -> int:
    """Print `error: message` on one line of stderr (keys masked); the exit code."""
    message = (environment_keys() | LOG_FILTER.redactor).text(message)
    click.echo("error: " + " ".join(message.split()), err=True)
    return code


# --- tools -------------------------------------------------------------------------------


def load_tools(spec: str) -> list[Tool]:
    """The tools `module:attr` names (see `tools_from_spec`), as a command-line parameter."""
    try:
        return tools_from_spec(spec)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _tools_option(ctx: click.Context, param: click.Parameter, specs: Sequence[str]) -> list[Tool]:
    """Every `--tools` spec loaded (the specs kept as given); tool names must be unique."""
    ctx.meta.setdefault(mcp.GIVEN, {})["tools"] = tuple(specs)
    tools = [item for spec in specs for item in load_tools(spec)]
    names = [item.name for item in tools]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise click.BadParameter(f"duplicate tool name(s): {', '.join(duplicates)}")
    return tools


#: The repeatable `--tools MODULE:ATTR` option, loaded as the command line is parsed.
TOOLS = click.option(
    "--tools",
    multiple=True,
    metavar="MODULE:ATTR",
    callback=_tools_option,
    help="Tools to offer: a Tool, a list of tools, or functions (repeatable).",
)


def _agent_option(
    ctx: click.Context, param: click.Parameter, spec: str | None
) -> AgentDefinition[Any, Any] | None:
    """`--agent MODULE:ATTR`: the AgentDefinition it names."""
    if spec is None:
        return None
    value = imported(spec)
    if not isinstance(value, AgentDefinition):
        raise click.BadParameter(f"{spec} is not an AgentDefinition")
    return value


#: `--agent MODULE:ATTR`: the definition agent runs (structured outputs) go on through.
AGENT = click.option(
    "--agent",
    metavar="MODULE:ATTR",
    callback=_agent_option,
    help="For agent runs (structured outputs): their AgentDefinition, which they go on "
    "through (its helpers, output tool and validators).",
)


# --- journals ----------------------------------------------------------------------------


def check_journal(path: Path | DatabaseUrl, *, must_exist: bool = True) -> None:
    """Refuse a missing file, or one that is neither JSON lines (.jsonl) nor SQLite."""
    if isinstance(path, DatabaseUrl):  # a database: its journal says what is wrong
        return
    if not path.exists():
        if must_exist:
            raise click.ClickException(f"no journal at {path}")
        return
    if path.suffix != ".jsonl" and path.is_file() and path.stat().st_size and not is_sqlite(path):
        raise click.ClickException(f"{path} is not a journal (SQLite, or .jsonl)")


def writing(path: Path | DatabaseUrl) -> Journal:
    """A journal to write to (created if missing); one that cannot be is a `JournalError`."""
    check_journal(path, must_exist=False)
    return open_location(path)


@contextlib.contextmanager
def reading(path: Path | DatabaseUrl) -> Iterator[Journal]:
    """An existing journal, opened for reading (never created); unreadable content is an error."""
    check_journal(path)
    journal = open_location(path)  # a JournalError names the path; main prints it on one line
    try:
        yield journal
    finally:
        journal.close()


def session_in(journal: Journal, path: Path | DatabaseUrl, given: str) -> str:
    """The session id `given` names exactly, or as the unique prefix of one."""
    sessions = journal.sessions()
    if given in sessions:
        return given
    matches = [sid for sid in sessions if sid.startswith(given)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise click.ClickException(f"{given!r} matches {len(matches)} sessions in {path}")
    known = ", ".join(sessions[:5]) + (", ..." if len(sessions) > 5 else "")
    raise click.ClickException(
        f"no session {given!r} in {path}" + (f" (it has: {known})" if sessions else "")
    )


# --- run and chat ------------------------------------------------------------------------


#: The options naming the model and the tools: run, chat, serve and worker take them.
CONNECTION: list[Callable[[Any], Any]] = [
    click.option(
        "--provider",
        type=PROVIDER,
        default="openai",
        envvar="TOOLREEL_PROVIDER",
        help=PROVIDER_HELP,
    ),
    click.option("--model", metavar="NAME", envvar="TOOLREEL_MODEL", help=MODEL_HELP),
    click.option("--base-url", metavar="URL", envvar="TOOLREEL_BASE_URL", help=URL_HELP),
    click.option("--api-key", metavar="KEY", help="Default: OPENAI_API_KEY, ... per provider."),
    TOOLS,
    mcp.MCP,
    mcp.MCP_URL,
]


def _model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options `run` and `chat` share: which model, which tools, where to journal."""
    options = [
        *CONNECTION,
        click.option("--journal", type=JOURNAL_TYPE, help=JOURNAL_HELP),
        click.option("--session", metavar="ID", help="Session id; one in --journal continues."),
        click.option(
            "--max-iterations", type=click.IntRange(min=1), default=5, metavar="N", help=MAX_HELP
        ),
        click.option("--system", metavar="TEXT", help="System prompt."),
        *SETTINGS,
        click.option("--no-stream", is_flag=True, help="Ask for whole responses, not streams."),
        click.option(
            "--no-prompt-cache",
            is_flag=True,
            help="Send no prompt-cache hints (Anthropic breakpoints, OpenAI's prompt_cache_key).",
        ),
        RECOVERY,
        *fallback.OPTIONS,
        *budgets.options(),
        *context.options(),
    ]
    return _with(options)(command)


#: The model's sampling settings, for run and chat (checked by AgentOptions; journaled).
SETTINGS = [
    click.option(
        "--temperature",
        type=float,
        metavar="T",
        help="Sampling temperature, 0 to 2 (0: the most repeatable) [default: the server's].",
    ),
    click.option(
        "--max-tokens",
        type=int,
        metavar="N",
        help="Output tokens per model call at most [default: the server's].",
    ),
]


def _with(
    options: Sequence[Callable[[Any], Any]],
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator adding the click `options` to a command, in the order given."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        """The command with every option on it."""
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def agent_options(params: dict[str, Any], journal: Journal | None) -> AgentOptions:
    """The Client options the `run`/`chat` parameters describe (tools always executed)."""
    model = params["model"] or DEFAULT_MODELS.get(params["provider"])
    if not model or (params["base_url"] and not params["model"]):
        raise click.UsageError("--model is required with --base-url or this provider")
    try:
        return _options(params, model, journal)
    except ConfigError as exc:
        option = OPTION_OF.get(exc.field.partition("[")[0], "--" + exc.field.replace("_", "-"))
        raise click.BadParameter(str(exc), param_hint=f"'{option}'") from exc


#: The command-line option of each AgentOptions field whose name differs from it.
OPTION_OF = {
    "max_tool_iterations": "--max-iterations",
    "system_prompt": "--system",
    "session_id": "--session",
    "stream": "--no-stream",
    "mcp_servers": "--mcp",
    "budget": "--max-cost",
    "max_calls_per_tool": "--max-tool-calls",
    "fallbacks": "--fallback-model",
}


def _options(params: dict[str, Any], model: str, journal: Journal | None) -> AgentOptions:
    """The AgentOptions themselves (each value checked by AgentOptions)."""
    return AgentOptions(
        system_prompt=params["system"],
        model=model,
        temperature=params.get("temperature"),
        max_tokens=params.get("max_tokens"),
        base_url=params["base_url"],
        provider=params["provider"],
        api_key=params["api_key"],
        tools=params["tools"],
        mcp_servers=mcp.mcp_servers(params),
        auto_execute_tools=True,
        max_tool_iterations=params["max_iterations"],
        stream=not params["no_stream"],
        journal=journal,
        session_id=params["session"],
        tool_call_recovery=params.get("tool_call_recovery"),
        prompt_cache="off" if params.get("no_prompt_cache") else "auto",
        budget=params.get("budget") or budgets.budget_of(params),
        fallbacks=fallback.fallbacks(params),
        fallback_on=fallback.fallback_on(params),
        compaction=params.get("compaction") or context.compaction_of(params),
    )


def check_key(options: AgentOptions, *, testable: bool = True) -> None:
    """Refuse a mangled key, or none for a hosted provider, in the command line's words.

    `testable`: the command takes `--model test`, which needs neither (said so).
    """
    codec = codec_for(options.provider)
    try:
        secret = api_key(codec, options.api_key)
    except ConfigError as exc:  # whitespace inside the key (or its variable): never shown
        raise click.UsageError(exc.allowed) from exc
    try:
        require_key(codec, secret, options.base_url)
    except ConfigError as exc:
        names = " or ".join(codec.api_key_env)
        others = "--base-url URL for a server that needs none"
        if testable:
            others += "; --model test tries toolreel with no key and no server"
        raise click.UsageError(
            f"no API key for {codec.name}: give --api-key KEY or set {names} ({others})"
        ) from exc


def _converse(
    params: dict[str, Any], prompts: live.Prompts, decisions: list[live.Decision] | None = None
) -> int:
    """Run the prompts as turns of one session (after `decisions`, if any); the exit code."""
    testing = params["model"] == "test"  # TestModel: calls each tool once, no key, no server
    options = agent_options(params, None)
    if not testing:  # no key (say which flag or variable gives one) before anything runs
        check_key(options)
    path: Path | DatabaseUrl | None = params["journal"]
    journal = writing(path) if path else None
    view = render.TurnView(
        *render.consoles(),
        secrets=(options.api_key.value if options.api_key else None, *environment_keys().secrets),
    )
    try:
        options = attrs.evolve(options, journal=journal)
        with test_model() if testing else contextlib.nullcontext():
            where = str(path or "")
            talk = functools.partial(live.converse, decisions=decisions, again=again_flags(params))
            return anyio.run(talk, options, prompts, view, where)
    finally:
        if journal is not None:
            journal.close()


@contextlib.contextmanager
def test_model() -> Iterator[None]:
    """`--model test`: every model opened inside is a TestModel (see toolreel.testing)."""
    from toolreel.shell.engine import MODEL_OVERRIDE  # noqa: PLC0415 - only for --model test
    from toolreel.shell.scripted import TestModel  # noqa: PLC0415

    token = MODEL_OVERRIDE.set(TestModel())
    try:
        yield
    finally:
        MODEL_OVERRIDE.reset(token)


# --- the commands ------------------------------------------------------------------------


@click.group(
    "toolreel",
    cls=ToolreelGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Exit codes: 0 success; 1 a turn that did not complete, a replay divergence or "
    "another failure; 2 a usage error; 3 a turn left paused for approval (run, chat, approve, "
    "deny); 130 Ctrl-C. `python -m toolreel` runs this command too.",
)
@click.version_option(package_name="toolreel")
def cli() -> None:
    """toolreel: the LLM tool-calling loop, from the command line.

    Run a prompt (or chat) with your tools against any provider or
    OpenAI-compatible server, keep the session in a journal, then list, show,
    replay, export and import journaled sessions.
    """


#: `--image PATH` (repeatable), for run and chat.
IMAGES = click.option(
    "--image",
    "image_paths",
    multiple=True,
    metavar="PATH",
    help="An image sent with the (first) prompt (PNG, JPEG, GIF, WebP; a path or an http(s) "
    "URL). Repeatable.",
)


def _images(paths: Sequence[str]) -> tuple[ImagePart, ...]:
    """The `--image` paths read, each as an `ImagePart` (a bad one is a usage error)."""
    try:
        return tuple(image(path) for path in paths)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="'--image'") from exc


@cli.command()
@click.argument("prompt")
@IMAGES
@_model_options
@click.option(
    "--temporal", metavar="HOST:PORT", help="Run it as a workflow on this Temporal server."
)
@click.option("--task-queue", default=temporal_cli.DEFAULT_QUEUE, help=temporal_cli.QUEUE_HELP)
def run(
    prompt: str, image_paths: tuple[str, ...], temporal: str | None, task_queue: str, **params: Any
) -> int:
    """Run one prompt, streaming text and tool rounds.

    PROMPT "-" reads the prompt from stdin. With --temporal the session is a
    workflow that a `toolreel worker` (which holds the model and the tools)
    runs; the answer is printed.

    \b
    Exit codes:
      0    the turn completed
      1    it did not (the provider's message is shown), or another failure
      2    a usage error (a bad flag, no API key, ...)
      3    it paused for approval: decide with `toolreel approve` / `deny`
      130  Ctrl-C (the turn is interrupted and journaled)
    """
    if prompt == "-":
        prompt = _stdin_text()
    if not prompt.strip():
        raise click.UsageError("the prompt is empty")
    submitted(prompt)  # text no session can hold (an undecodable byte): refused before it begins
    if temporal:
        if image_paths:  # the workflow's prompt is text only
            raise click.BadParameter("not supported with --temporal", param_hint="'--image'")
        return _on_temporal(temporal, task_queue, prompt.strip(), params)
    attached = _images(image_paths)
    return _converse(params, live.Prompts(given=[prompt.strip()], images=attached))


def _stdin_text() -> str:
    """All of stdin as text; bytes that are not text kept as surrogates, as argv's are (so
    they are refused alike, not a traceback)."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        return sys.stdin.read()
    data: bytes = buffer.read()
    return data.decode(sys.stdin.encoding or "utf-8", "surrogateescape")


def refuse_on_temporal(params: dict[str, Any]) -> None:
    """Refuse the flags a session workflow cannot take: its worker builds the loop's config."""
    if budgets.budget_of(params) is not None:
        raise click.UsageError("budget flags are not supported with --temporal yet")
    if context.compaction_of(params) is not None:
        raise click.UsageError(
            "--keep-turns and --context-tokens are not supported with --temporal yet"
        )
    if params.get("fallback_models") or params.get("fallback_on"):
        raise click.UsageError(
            "--fallback-model and --fallback-on are not supported with --temporal: "
            "a worker holds one model"
        )
    for name in ("temperature", "max_tokens"):
        if params.get(name) is not None:
            hint = f"'--{name.replace('_', '-')}'"
            raise click.BadParameter("not supported with --temporal yet", param_hint=hint)


def _on_temporal(address: str, task_queue: str, prompt: str, params: dict[str, Any]) -> int:
    """`run --temporal`: the prompt as a session workflow (its worker holds model and tools)."""
    refuse_on_temporal(params)
    return temporal_cli.run_prompt(
        address,
        task_queue,
        prompt,
        session_id=params["session"],
        system=params["system"],
        max_iterations=params["max_iterations"],
    )


@cli.command()
@IMAGES
@_model_options
@click.option("--temporal", metavar="HOST:PORT", help="Chat through a session workflow there.")
@click.option("--task-queue", default=temporal_cli.DEFAULT_QUEUE, help=temporal_cli.QUEUE_HELP)
def chat(image_paths: tuple[str, ...], temporal: str | None, task_queue: str, **params: Any) -> int:
    """Talk with the model, one prompt a line.

    Reads prompts from stdin until EOF or /exit; each answer streams like `run`.
    A line `/image PATH` attaches an image to the next prompt (--image: to the
    first); /help lists the commands. Ctrl-C interrupts the answer in
    progress; at the prompt it quits. With --temporal each prompt is a turn
    of a session workflow (--session continues a running one); /exit closes it.

    \b
    Exit codes:
      0    every turn completed
      1    one did not, or another failure
      2    a usage error
      3    input ended while a call waits for approval (see `toolreel approve`)
      130  Ctrl-C at the prompt
    """
    if temporal and image_paths:  # the workflow's prompt is text only
        raise click.BadParameter("not supported with --temporal", param_hint="'--image'")
    if temporal:
        refuse_on_temporal(params)
        lines = (line.rstrip("\n") for line in sys.stdin if line.strip())
        return temporal_cli.chat(
            temporal,
            task_queue,
            lines,
            session_id=params["session"],
            system=params["system"],
            max_iterations=params["max_iterations"],
        )
    return _converse(params, live.Prompts(interactive=True, images=_images(image_paths)))


def _decide(params: dict[str, Any], decisions: list[live.Decision]) -> int:
    """Decide calls of the paused session `--journal` / `--session` name, then go on.

    The session's recorded settings hold where no flag is given (`recorded`).
    """
    path: Path | None = params["journal"]
    if path is None or not params["session"]:
        raise click.UsageError("--journal and --session name the paused session")
    with reading(path) as store:
        params["session"] = session_in(store, path, params["session"])
        config = store.config(params["session"])
    if isinstance(config, LoopConfig) and not config.structured:  # a chat's settings
        params = recorded(params, config)
    return _converse(params, live.Prompts(), decisions)


#: The `run`/`chat` parameters the journal records, as the LoopConfig fields that hold them.
RECORDED = {
    "model": "model",
    "system": "system_prompt",
    "max_iterations": "max_iterations",
    "temperature": "temperature",
    "max_tokens": "max_tokens",
}


def recorded(params: dict[str, Any], config: LoopConfig) -> dict[str, Any]:
    """`params` with the session's recorded settings where no flag (or variable) gave one.

    The model, system prompt, limits, sampling settings and budget are in the
    journal; the connection and the tools are not (the paused run's note says
    which flags to give again).
    """
    ctx = click.get_current_context()
    given = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)
    found = {
        name: getattr(config, field)
        for name, field in RECORDED.items()
        if ctx.get_parameter_source(name) not in given
    }
    if budgets.budget_of(params) is None and config.budget is not None:
        found["budget"] = config.budget
    found.update(fallback.recorded(config, lambda name: ctx.get_parameter_source(name) in given))
    if context.compaction_of(params) is None and config.compaction is not None:
        found["compaction"] = config.compaction
    return {**params, **found}


def again_flags(params: dict[str, Any]) -> str:
    """The flags a later `approve` / `deny` must give again: connection and tools, never a key."""
    given = click.get_current_context().meta.get(mcp.GIVEN, {})
    flags = [] if params["provider"] == "openai" else ["--provider", params["provider"]]
    if params["base_url"]:
        flags += ["--base-url", params["base_url"]]
    if params.get("tool_call_recovery"):
        flags += ["--tool-call-recovery", params["tool_call_recovery"]]
    for name, flag in (("tools", "--tools"), ("mcp_commands", "--mcp"), ("mcp_urls", "--mcp-url")):
        flags += [item for value in given.get(name, ()) for item in (flag, value)]
    return shlex.join(flags) + (" --api-key KEY" if params["api_key"] else "")


@cli.command()
@click.argument("call_ids", nargs=-1, required=True, metavar="CALL_ID...")
@_model_options
def approve(call_ids: tuple[str, ...], **params: Any) -> int:
    """Approve calls a paused turn holds, then go on with the turn.

    The session is --journal FILE --session ID (a unique prefix will do). Give
    the connection and --tools again (the paused run printed the whole
    command); the model, system prompt, limits and sampling settings are the
    session's unless given. Once no call is held the turn continues and streams
    like `run`.

    \b
    Exit codes:
      0    the turn completed
      1    it did not, or another failure
      2    a usage error (e.g. no such call is held)
      3    it paused again
      130  Ctrl-C
    """
    return _decide(params, [live.Decision(call_id, approve=True) for call_id in call_ids])


@cli.command()
@click.argument("call_ids", nargs=-1, required=True, metavar="CALL_ID...")
@click.option("--reason", default="", help="What the model reads [default: the user denied it].")
@_model_options
def deny(call_ids: tuple[str, ...], reason: str, **params: Any) -> int:
    """Deny calls a paused turn holds (the model reads --reason), then go on.

    As `approve`: --journal and --session name the session; give the
    connection and --tools again. Exit codes as `approve`'s.
    """
    decided = [live.Decision(call_id, approve=False, reason=reason) for call_id in call_ids]
    return _decide(params, decided)


@cli.command()
@JOURNAL
@click.option("-q", "--quiet", is_flag=True, help="Print only the session ids, one a line.")
def sessions(journal: Path | DatabaseUrl, quiet: bool) -> None:
    """List the sessions in a journal.

    One row per session: id, turns, events, how the last turn ended (or
    "awaiting approval (N)": paused, see `approve` / `deny`), tokens, and cost
    (at the price the session's budget was given, else the genai-prices table's
    for its model, with `toolreel[prices]`; "unknown" where there is none).
    """
    with reading(journal) as store:
        if quiet:
            click.echo("".join(f"{sid}\n" for sid in store.sessions()), nl=False)
            return
        found = [
            load_agent_session(store, sid)
            if store.config(sid).structured
            else load_session(store, sid)
            for sid in store.sessions()
        ]
    if not found:
        click.echo(f"no sessions in {journal}", err=True)
        return
    costs = [cost_of(one.usage, one.config) for one in found]
    render.consoles()[0].print(render.sessions_table(found, costs))


@cli.command()
@JOURNAL
@click.argument("session")
@click.option("--expand", is_flag=True, help="Show every tool call and result in full.")
@click.option("--ids", is_flag=True, help="Show the session and tool call ids.")
def show(journal: Path | DatabaseUrl, session: str, expand: bool, ids: bool) -> None:
    """Print a session's transcript.

    SESSION is an id, or a unique prefix of one. Tool rounds are collapsed to one
    line per turn, as chat UIs show them, unless --expand. Token counts say how
    many input tokens were read from (and written to) the provider's prompt
    cache, and what each turn cost where the model's price is known.
    """
    with reading(journal) as store:
        sid = session_in(store, journal, session)
        if store.config(sid).structured:  # an agent run: its own rendering
            run = load_agent_session(store, sid)
            price = session_price(run.config)
            click.echo(render_agent_transcript(run, ids=ids, price=price), nl=False)
            return
        loaded = load_session(store, sid)
    for warning in loaded.warnings:  # edited or missing steps: shown, but said so
        click.echo(f"warning: {warning}", err=True)
    text = render_transcript(loaded, expand=expand, ids=ids, price=session_price(loaded.config))
    click.echo(text, nl=False)


@cli.command()
@JOURNAL
@click.argument("session", required=False)
def replay(journal: Path | DatabaseUrl, session: str | None) -> int:
    """Verify sessions replay to the recorded effects.

    Folds every recorded event of SESSION (default: every session) through the
    reducer again, under the recorded config, and compares the effects with the
    journal's. Prints OK per session, or the step where it diverges and the
    diff; exit 1 on any divergence.
    """
    out, _ = render.consoles()
    diverged = False
    with reading(journal) as store:
        ids = [session_in(store, journal, session)] if session else store.sessions()
        if not ids:
            click.echo(f"no sessions in {journal}", err=True)
        for sid in ids:
            result = replay_session(store, sid)
            if isinstance(result, Divergence):
                diverged = True
                out.print(render.diff_text(str(result)), end="")
            else:
                out.print(render.replay_ok(result))
    return EXIT_FAILED if diverged else EXIT_OK


@cli.command(name="export")
@JOURNAL
@click.argument("session")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
def export_command(journal: Path | DatabaseUrl, session: str, out: Path) -> None:
    """Export one session to a new JSON-lines file.

    OUT (ending .jsonl) gets the session's config and every step; `import` reads it.
    """
    if out.suffix != ".jsonl":
        raise click.BadParameter("the export file must end .jsonl", param_hint="OUT")
    with reading(journal) as store:
        sid = session_in(store, journal, session)
        export_session(store, sid, out)  # an existing OUT is a JournalError
    click.echo(f"exported session {sid} to {out}", err=True)


@cli.command(name="import")
@click.argument("source", type=JOURNAL_TYPE)
@click.argument("journal", type=JOURNAL_TYPE, required=False)
@click.option("--session", help="The session of SOURCE to import (if it holds several).")
@click.option("--temporal", "workflow", metavar="WORKFLOW_ID", help="Import a session workflow.")
@click.option(
    "--temporal-address", default="127.0.0.1:7233", show_default=True, metavar="HOST:PORT"
)
def import_command(
    source: Path | DatabaseUrl,
    journal: Path | DatabaseUrl | None,
    session: str | None,
    workflow: str | None,
    **extra: str,
) -> None:
    """Import an exported session, or a Temporal session workflow, into a journal.

    Copies the session of SOURCE (a file `export` wrote) into JOURNAL, which is
    created if missing; the session keeps its id. With --temporal WORKFLOW_ID,
    give JOURNAL alone: the workflow's history becomes the session (its id the
    workflow's, unless --session), which replay and show then read.
    """
    if workflow is not None:
        if journal is not None:
            raise click.UsageError("with --temporal, give only the JOURNAL to import into")
        target = writing(source)
        try:
            sid = temporal_cli.import_workflow(extra["temporal_address"], workflow, target, session)
        finally:
            target.close()
        click.echo(f"imported session {sid} into {source}", err=True)
        return
    if journal is None:
        raise click.UsageError("missing argument 'JOURNAL'")
    if isinstance(source, DatabaseUrl) or source.suffix != ".jsonl":
        raise click.BadParameter("expected a .jsonl file that `export` wrote", param_hint="SOURCE")
    with reading(source) as exported:  # check before the target is created
        found = exported.sessions()
        if session is None and len(found) != 1:
            raise click.ClickException(f"{source} holds {len(found)} sessions; name one")
        session = session_in(exported, source, session or found[0])
    target = writing(journal)
    try:
        sid = import_session(source, target, session)
    finally:
        target.close()
    click.echo(f"imported session {sid} into {journal}", err=True)


@cli.command()
@click.option("--provider", type=PROVIDER, help="A real provider.")
@click.option("--model", help="Its model.")
@click.option("--base-url", help="Any OpenAI-compatible server (Ollama, LM Studio, ...).")
@click.option("--journal", type=JOURNAL_TYPE, help=JOURNAL_HELP)
def demo(**params: Any) -> int:
    """Run the calculator agent demo.

    Three arithmetic prompts with four tools, answered by a scripted model on
    127.0.0.1, or by a real one when OPENAI_API_KEY, ANTHROPIC_API_KEY or
    GEMINI_API_KEY is set, or --base-url is given.
    """
    if params["journal"] is not None:  # a file that is no journal: refused before anything runs
        check_journal(params["journal"], must_exist=False)
    given = [
        (f"--{name.replace('_', '-')}", _text(value)) for name, value in params.items() if value
    ]
    return demo_module.main([item for pair in given for item in pair])


def _text(value: Any) -> str:
    """An option's value as the demo's own command line takes it (a URL unmasked)."""
    return value.url if isinstance(value, DatabaseUrl) else str(value)


@cli.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (off loopback, e.g. 0.0.0.0: an access token is required).",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="0: any free."
)
@_with(CONNECTION)
@click.option("--journal", type=JOURNAL_TYPE, help=JOURNAL_HELP)
@click.option("--system", metavar="TEXT", help="System prompt.")
@click.option("--max-iterations", type=click.IntRange(min=1), default=5, metavar="N", help=MAX_HELP)
@RECOVERY
@click.option(
    "--cors-origin",
    "cors",
    multiple=True,
    metavar="ORIGIN",
    help="A page origin that may call the API, e.g. http://localhost:3000 (repeatable).",
)
@click.option(
    "--allowed-host",
    "hosts",
    multiple=True,
    metavar="NAME",
    help="Another host name to answer to, besides localhost and --host (repeatable; '*': any).",
)
@click.option(
    "--token",
    envvar="TOOLREEL_TOKEN",
    metavar="TOKEN",
    help="Access token every request must carry (Authorization: Bearer, or the ?token= link). "
    "Off loopback one is required: made and printed if not given.",
)
@click.option(
    "--max-body",
    type=click.IntRange(min=1),
    metavar="BYTES",
    help="Largest request body accepted (413 beyond) [default: 10485760, 10 MiB].",
)
@_with(budgets.options())
@_with(context.options())
@_with(fallback.OPTIONS)
@click.option(
    "--temporal",
    "address",
    metavar="HOST:PORT",
    help="Serve chats as session workflows there (the workers hold the model and the tools).",
)
@click.option("--task-queue", default=temporal_cli.DEFAULT_QUEUE, help=temporal_cli.QUEUE_HELP)
def serve(
    *,
    host: str,
    port: int,
    cors: tuple[str, ...],
    hosts: tuple[str, ...],
    token: str | None,
    max_body: int | None,
    address: str | None,
    task_queue: str,
    **params: Any,
) -> int:
    """Serve the loop to a browser: chat page, AI SDK endpoint, sessions.

    GET / is the page; POST /api/chat speaks the AI SDK UI message stream
    (point useChat() at it), POST /api/events a plain JSON event stream, GET
    /api/sessions lists the journal's sessions. With no API key and no
    --base-url, the offline scripted calculator model answers. The budget,
    compaction and fallback flags (as for `run`) hold for every chat served. Only this server's page
    and --cors-origin pages may post to it, under the names it is served by;
    off loopback (--host 0.0.0.0), every request must carry the access token.
    With --temporal each chat is a session workflow on that server, run by
    `toolreel worker`s of --task-queue, its text streamed as the model writes.
    """
    params.update(session=None, no_stream=False)
    access = serving.Access(
        cors_origins=cors, allowed_hosts=hosts, token=token, max_body_bytes=max_body
    )
    if address is not None:
        return _serve_on_temporal(address, task_queue, params, host=host, port=port, access=access)
    path: Path | DatabaseUrl | None = params["journal"]
    journal = writing(path) if path else None
    try:
        if serving.wants_scripted(params):
            with serving.scripted_options(params) as options:
                return serving.serve(
                    options, journal, host=host, port=port, scripted=True, access=access
                )
        options = agent_options(params, None)
        check_key(options)
        return serving.serve(options, journal, host=host, port=port, scripted=False, access=access)
    finally:
        if journal is not None:
            journal.close()


def _serve_on_temporal(
    address: str,
    task_queue: str,
    params: dict[str, Any],
    *,
    host: str,
    port: int,
    access: serving.Access,
) -> int:
    """`serve --temporal`: no journal, model or tools here (the workers hold them)."""
    refuse_on_temporal(params)
    held = {"journal": "--journal", "tools": "--tools", "mcp_commands": "--mcp"}
    for name, flag in {**held, "mcp_urls": "--mcp-url"}.items():
        if params.get(name):
            raise click.BadParameter("the workers hold it with --temporal", param_hint=f"'{flag}'")
    if not params["model"]:  # what /api/info shows: the workers' model is theirs to say
        params["model"] = "temporal-workers"
    chats = temporal_cli.Chats(
        address=address,
        task_queue=task_queue,
        system=params["system"],
        max_iterations=params["max_iterations"],
    )
    options = agent_options(params, None)
    return serving.serve(
        options, None, host=host, port=port, scripted=False, access=access, temporal=chats
    )


@cli.command()
@click.option(
    "--temporal", "address", required=True, metavar="HOST:PORT", help=temporal_cli.ADDRESS_HELP
)
@click.option(
    "--task-queue",
    default=temporal_cli.DEFAULT_QUEUE,
    show_default=True,
    help=temporal_cli.QUEUE_HELP,
)
@_with(CONNECTION)
@click.option("--system", metavar="TEXT", help="System prompt (a session may set its own).")
@click.option("--max-iterations", type=click.IntRange(min=1), default=5, metavar="N", help=MAX_HELP)
@click.option("--no-stream", is_flag=True, help="Ask for whole responses, not streams.")
@RECOVERY
@click.option(
    "--sticky-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    help="How long a session waits for this worker before another takes it over.",
)
@temporal_cli.AGENTS
def worker(address: str, task_queue: str, sticky_seconds: float, **params: Any) -> int:
    """Serve session workflows on a Temporal server.

    The worker holds the model connection, the tools and the agents
    (`--agents`, for `toolreel.temporal.run_agent`); `toolreel run --temporal`
    starts sessions that any worker of TASK_QUEUE carries out.
    Runs until stopped (Ctrl-C: exit 130).
    """
    agents = params.pop("agents")
    params.update(session=None, journal=None)
    options = agent_options(params, None)
    check_key(options, testable=False)
    return temporal_cli.serve_worker(options, address, task_queue, sticky_seconds, agents)


# The what-if commands (fork, rerun, diff) and eval live in their own modules, which use the
# helpers above: imported once they are defined.
from . import _eval as evaluation  # noqa: E402
from . import _whatif as whatif  # noqa: E402

for _command in (*whatif.COMMANDS, *evaluation.COMMANDS):
    cli.add_command(_command)

# `mcp-serve` too (it imports toolreel.mcp, and the MCP SDK, only when it runs).
from ._mcp_serve import mcp_serve  # noqa: E402

cli.add_command(mcp_serve)

# `a2a-serve` too (it imports toolreel.a2a, and a2a-sdk, only when it runs).
from ._a2a import a2a_serve  # noqa: E402

cli.add_command(a2a_serve)


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: run the command line; its exit code."""
    code = cli.main(argv, "toolreel", standalone_mode=False)
    return code if isinstance(code, int) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
