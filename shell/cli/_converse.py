"""The `toolreel` command's live session: prompts, stdin, Ctrl-C, and the turns of one session.

`converse` drives a session's turns through a `Client` and renders them with a
`TurnView`; Ctrl-C interrupts the running turn through the client, and while a
prompt is being read it quits.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.lowlevel
import attrs
from rich.text import Text

from toolreel.core import Finish, FinishReason, ImagePart, LoopConfig, Phase

from .._client import Client
from .._options import AgentOptions
from ._render import TurnView


@attrs.define
class Prompts:
    """Where prompts come from: the ones given, or stdin lines until EOF or `/exit`."""

    given: list[str] = attrs.Factory(list)
    interactive: bool = False
    #: Images sent with the first prompt (`toolreel run --image`).
    images: tuple[ImagePart, ...] = ()

    def take_images(self) -> tuple[ImagePart, ...]:
        """The images for the prompt being sent: the first prompt's, once."""
        images, self.images = self.images, ()
        return images

    async def next(self, view: TurnView) -> str | None:
        """The next prompt, or None at the end."""
        if not self.interactive:
            return self.given.pop(0) if self.given else None
        tty = sys.stdin.isatty()
        while True:
            line = await read_line("> " if tty else "")
            if line is None or line.strip() in ("/exit", "/quit"):
                return None
            if line.strip():
                if not tty:
                    view.out.print(Text("> " + line.strip(), style="bold"))
                return line.strip()


async def read_line(prompt: str) -> str | None:
    """One line of stdin (None at EOF), read in a daemon thread so that Ctrl-C never waits on it."""
    done = anyio.Event()
    token = anyio.lowlevel.current_token()
    box: list[str] = []

    def reader() -> None:
        try:
            box.append(input(prompt) + "\n" if prompt else sys.stdin.readline())
        except (EOFError, OSError, ValueError):
            box.append("")
        with contextlib.suppress(RuntimeError):  # the session ended meanwhile
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=reader, name="toolreel-stdin", daemon=True).start()
    await done.wait()
    return box[0] or None


class Interrupts:
    """Ctrl-C: interrupts the running turn through the client; while reading a prompt, quits."""

    def __init__(self, client: Client) -> None:
        """Watch on behalf of `client`."""
        self.client = client
        self.reading: anyio.CancelScope | None = None
        self.quit = False

    async def watch(self) -> None:
        """Act on each SIGINT (where signals cannot be caught, Ctrl-C stays KeyboardInterrupt)."""
        with contextlib.ExitStack() as stack:
            try:
                signals = stack.enter_context(anyio.open_signal_receiver(signal.SIGINT))
            except (NotImplementedError, ValueError, RuntimeError):
                return
            async for _ in signals:
                if self.reading is not None:
                    self.quit = True
                    self.reading.cancel()
                else:
                    await self.client.interrupt()

    async def prompt(self, prompts: Prompts, view: TurnView) -> str | None:
        """The next prompt; None at the end or when Ctrl-C quits."""
        with anyio.CancelScope() as scope:
            self.reading = scope
            try:
                return await prompts.next(view)
            finally:
                self.reading = None
        return None


def exit_code(finish: Finish) -> int:
    """0 completed, 130 interrupted, 1 anything else."""
    if finish.reason is FinishReason.COMPLETED:
        return 0
    return 130 if finish.reason is FinishReason.CANCELLED else 1


async def follow(client: Client, view: TurnView) -> Finish:
    """Render the running turn to its end; its `Finish`."""
    view.waiting("thinking…")
    finish = None
    try:
        async for item in client.events():
            view.show(item)
            if isinstance(item, Finish):
                finish = item
    finally:
        view.quiet()
    finish = finish or client.last_finish
    assert finish is not None, "a turn always finishes"
    view.finished(finish)
    return finish


def _client(options: AgentOptions, view: TurnView) -> Client:
    """A client for a new session, or one continuing the journal's session of that id."""
    journal, session_id = options.journal, options.session_id
    if not session_id or journal is None or isinstance(journal, str | Path):
        return Client(options)
    if session_id not in journal.sessions():
        return Client(options)
    client = Client.resume(session_id, options)
    old, new = journal.config(session_id), client.config
    changed = [
        f.name for f in attrs.fields(LoopConfig) if getattr(old, f.name) != getattr(new, f.name)
    ]
    if changed:
        view.note(
            f"note: continuing session {session_id} with a different {', '.join(changed)} "
            "(its earlier turns keep theirs)",
            "yellow",
        )
    return client


async def converse(options: AgentOptions, prompts: Prompts, view: TurnView, where: str) -> int:
    """Run each prompt as a turn of one session; the exit code (0, 1, or 130 on Ctrl-C)."""
    client = _client(options, view)
    worst = 0
    async with client, anyio.create_task_group() as tasks:
        guard = Interrupts(client)
        tasks.start_soon(guard.watch)
        if client.phase is not Phase.IDLE:
            view.note("finishing the turn an earlier run left unfinished")
            worst = max(worst, exit_code(await follow(client, view)) % 130)
        while (prompt := await guard.prompt(prompts, view)) is not None:
            await client.query(prompt, images=prompts.take_images())
            code = exit_code(await follow(client, view))
            if code == 130 and not prompts.interactive:
                worst = 130
                break
            worst = max(worst, code % 130)
        if guard.quit:
            view.out.print()  # leave the prompt's line
            worst = 130
        tasks.cancel_scope.cancel()
    if where:
        view.note(f"session {client.session_id} · {where}")
    return worst
