"""`toolreel worker`, `run --temporal`, `chat --temporal`, `serve --temporal` and
`import --temporal`: sessions on Temporal.

toolreel.temporal (and temporalio with it) is imported only when one of these
runs: the rest of the command line, and `import toolreel.shell`, never load it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import click

from toolreel.adapters import Journal
from toolreel.core.outcomes import FinishReason
from toolreel.core.record import Value
from toolreel.shell import AgentDefinition, AgentOptions

from ._specs import imported

if TYPE_CHECKING:
    from temporalio.client import Client

    from toolreel.temporal import WorkflowChats

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130
#: The task queue `worker` serves and `run --temporal` uses unless told another.
DEFAULT_QUEUE = "toolreel"
ADDRESS_HELP = (
    "The Temporal server (HOST:PORT), e.g. 127.0.0.1:7233 for `temporal server start-dev`."
)
QUEUE_HELP = "The task queue workers serve sessions on."


def load_agents(spec: str) -> dict[str, AgentDefinition[Any, Any]]:
    """The agent definitions `module:attr` names: a dict of name -> `AgentDefinition`."""
    value = imported(spec)
    if not isinstance(value, Mapping) or not all(
        isinstance(name, str) and isinstance(item, AgentDefinition) for name, item in value.items()
    ):
        raise click.BadParameter(f"{spec} is not a dict of name -> AgentDefinition")
    return dict(value)


def _agents_option(
    ctx: click.Context, param: click.Parameter, specs: Sequence[str]
) -> dict[str, AgentDefinition[Any, Any]]:
    """Every `--agents` spec loaded; names must be unique."""
    agents: dict[str, AgentDefinition[Any, Any]] = {}
    for spec in specs:
        loaded = load_agents(spec)
        if clash := sorted(set(agents) & set(loaded)):
            raise click.BadParameter(f"duplicate agent name(s): {', '.join(clash)}")
        agents.update(loaded)
    return agents


#: `worker`'s repeatable `--agents MODULE:ATTR` option, loaded as the command line is parsed.
AGENTS = click.option(
    "--agents",
    multiple=True,
    metavar="MODULE:ATTR",
    callback=_agents_option,
    help="Agents this worker runs for `run_agent`: a dict of name -> AgentDefinition.",
)


async def _connect(address: str) -> Client:
    """A Temporal client (a server that cannot be reached: one error line)."""
    from toolreel.temporal import connect  # noqa: PLC0415 - only when asked for

    return await connect(address)


def serve_worker(
    options: AgentOptions,
    address: str,
    task_queue: str,
    sticky: float,
    agents: Mapping[str, AgentDefinition[Any, Any]] | None = None,
) -> int:
    """Run a worker (of sessions, and of `agents` by name) until interrupted; 130 on Ctrl-C."""
    from toolreel.temporal import session_worker  # noqa: PLC0415 - only when asked for

    async def serve() -> None:
        client = await _connect(address)
        async with session_worker(
            client, options, task_queue=task_queue, sticky_seconds=sticky, agents=agents
        ):
            click.echo(f"worker serving {task_queue!r} on {address}", err=True)
            await asyncio.Event().wait()  # until the process is stopped

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return EXIT_OK


def run_prompt(
    address: str,
    task_queue: str,
    prompt: str,
    *,
    session_id: str | None,
    system: str | None,
    max_iterations: int | None,
) -> int:
    """Run one prompt as a session workflow; print its answer; 0 if the turn completed."""
    from toolreel.temporal import SessionStart, last_finish, run_session  # noqa: PLC0415

    async def run() -> int:
        client = await _connect(address)
        start = SessionStart(system_prompt=system, max_iterations=max_iterations)
        record = await run_session(
            client, prompt, task_queue=task_queue, session_id=session_id, start=start
        )
        finish = last_finish(record)
        if finish is None:
            click.echo("error: the session ended without a turn", err=True)
            return EXIT_FAILED
        if finish.text:
            click.echo(finish.text)
        if finish.error is not None:
            click.echo(f"error: {finish.error.message}", err=True)
        return EXIT_OK if finish.reason is FinishReason.COMPLETED else EXIT_FAILED

    try:
        code: int = asyncio.run(run())
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code


def import_workflow(address: str, workflow_id: str, journal: Journal, session: str | None) -> str:
    """Import a session workflow into `journal`; the session's id there."""
    from toolreel.temporal import import_workflow as importing  # noqa: PLC0415

    async def run() -> str:
        return await importing(await _connect(address), workflow_id, journal, session)

    return asyncio.run(run())


def chat(
    address: str,
    task_queue: str,
    prompts: Iterable[str],
    *,
    session_id: str | None,
    system: str | None,
    max_iterations: int | None,
) -> int:
    """Talk through a chat session workflow (a new one, or the running `session_id`).

    Each prompt is a turn; the answers are printed. The session stays open for
    a later `chat --temporal --session ID` unless a prompt says /exit.
    """
    from toolreel.temporal import SessionStart, open_chat, send_prompt  # noqa: PLC0415

    async def run() -> int:
        client = await _connect(address)
        start = SessionStart(system_prompt=system, max_iterations=max_iterations)
        handle = await open_chat(client, task_queue=task_queue, session_id=session_id, start=start)
        click.echo(f"session {handle.id}", err=True)
        code = EXIT_OK
        for prompt in prompts:
            if prompt.strip() == "/exit":
                await handle.signal("close")
                break
            finish = await send_prompt(handle, prompt)
            if finish.text:
                click.echo(finish.text)
            if finish.reason is not FinishReason.COMPLETED:
                code = EXIT_FAILED
        return code

    try:
        code: int = asyncio.run(run())
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Chats(Value):
    """`serve --temporal`: the chat session workflows the page and the API serve."""

    address: str
    task_queue: str
    system: str | None = None
    max_iterations: int | None = None

    @property
    def label(self) -> str:
        """What `serve` says it serves."""
        return f"the session workflows of task queue {self.task_queue!r} on {self.address}"

    async def connected(self) -> WorkflowChats:
        """The sessions, on a client of the server (one that cannot be reached: one error line)."""
        from toolreel.temporal import SessionStart, WorkflowChats  # noqa: PLC0415

        start = SessionStart(system_prompt=self.system, max_iterations=self.max_iterations)
        return WorkflowChats(await _connect(self.address), task_queue=self.task_queue, start=start)
