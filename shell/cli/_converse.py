"""The `toolreel` command's live session: prompts, stdin, Ctrl-C, and the turns of one session.

`converse` drives a session's turns through a `Client` and renders them with a
`TurnView`; Ctrl-C interrupts the running turn through the client, and while a
prompt is being read it quits. A turn that pauses for approval is decided on
stdin in `chat` ("approve NAME(ARGS)? [y/n]", then a reason for a no); `run`
leaves it paused for `toolreel approve` / `toolreel deny` (exit 3).
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import sys
import threading
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.lowlevel
import attrs
from rich.text import Text

from toolreel.core import AwaitApproval, ConfigError, Finish, ImagePart, LoopConfig, Phase
from toolreel.core.outcomes import FinishReason
from toolreel.core.record import Record, Value
from toolreel.shell import AgentOptions, Client, image

from ._render import TurnView, call_text

#: The exit code of a turn left paused for approval.
EXIT_PAUSED = 3
#: The exit code of a chat one of whose prompts was refused (as a refused `run`'s).
EXIT_REFUSED = 2


@attrs.frozen(repr=False, eq=False)
class Decision(Value):
    """A decision given on the command line: approve `call_id`, or deny it with `reason`."""

    call_id: str
    approve: bool
    reason: str = ""


#: The commands `chat` takes on a line of their own (`/help` lists them), with what each does.
COMMANDS = (
    ("/image PATH", "attach an image (a file or an http(s) URL) to the next prompt"),
    ("/help", "list these commands"),
    ("/exit", "leave (or /quit, or Ctrl-D); Ctrl-C stops an answer, and at the prompt leaves"),
)
#: What `chat` says first on a terminal, instead of a bare prompt.
GREETING = "one prompt a line · /help lists the commands · /exit or Ctrl-D leaves"


def is_command(line: str) -> bool:
    """Whether a (stripped) line is a `/command`: a slash and a word (not a path, not `//`)."""
    word = line.split(maxsplit=1)[0] if line else ""
    return len(word) > 1 and word[0] == "/" and word[1:].replace("_", "").isalpha()


@attrs.define(repr=False)
class Prompts(Record):
    """Where prompts come from: the ones given, or stdin lines until EOF or `/exit`.

    In `chat`, a line `/image PATH` (a file or an http(s) URL) attaches an
    image to the next prompt instead of being one; `/help` lists the commands;
    another `/word` is refused as an unknown command (a line starting `//` is
    sent as a prompt, less its first slash).
    """

    given: list[str] = attrs.Factory(list)
    interactive: bool = False
    #: Images sent with the next prompt (`--image`, then each `/image` line), once.
    images: tuple[ImagePart, ...] = ()

    def take_images(self) -> tuple[ImagePart, ...]:
        """The images for the prompt being sent (those gathered since the last one), once."""
        images, self.images = self.images, ()
        return images

    def attach(self, source: str, view: TurnView) -> None:
        """`/image PATH`: the image kept for the next prompt, or a note why it cannot be."""
        if not source:
            view.note("usage: /image PATH (a file or an http(s) URL)", "yellow")
            return
        try:
            part = image(source)
        except ConfigError as exc:
            view.note(f"error: {exc}", "red")
            return
        self.images = (*self.images, part)
        view.note(f"attached {part.label()} to the next prompt")

    def command(self, line: str, view: TurnView) -> None:
        """Carry out a `/command` line other than `/exit`; an unknown one is said so."""
        name, *rest = line.split(maxsplit=1)
        if name == "/image":
            self.attach("".join(rest), view)
            return
        if name != "/help":
            view.note(f"unknown command {name} (a line starting // is sent as a prompt)", "yellow")
        for usage, what in COMMANDS:
            view.note(f"  {usage:12} {what}")

    async def next(self, view: TurnView) -> str | None:
        """The next prompt, or None at the end."""
        if not self.interactive:
            return self.given.pop(0) if self.given else None
        tty = sys.stdin.isatty()
        while True:
            line = await read_line("> " if tty else "")
            if line is None or line.strip() in ("/exit", "/quit"):
                return None
            text = line.strip()
            if is_command(text):
                self.command(text, view)
                continue
            text = text[1:] if text.startswith("//") else text
            if text:
                if not tty:
                    view.out.print(Text("> " + text, style="bold"))
                return text


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

    async def answer(self, view: TurnView, question: str) -> str | None:
        """A line answering `question` (stripped, lower case kept); None at EOF or on Ctrl-C."""
        view.quiet()
        tty = sys.stdin.isatty()
        if not tty:
            view.out.print(Text(question, style="bold"), end="")
        with anyio.CancelScope() as scope:
            self.reading = scope
            try:
                line = await read_line(question if tty else "")
            finally:
                self.reading = None
            if not tty:
                view.out.print((line or "").strip())
            return None if line is None else line.strip()
        return None


def exit_code(outcome: Finish | AwaitApproval) -> int:
    """0 completed, 130 interrupted, 3 paused for approval, 1 anything else."""
    if isinstance(outcome, AwaitApproval):
        return EXIT_PAUSED
    if outcome.reason is FinishReason.COMPLETED:
        return 0
    return 130 if outcome.reason is FinishReason.CANCELLED else 1


async def follow(client: Client, view: TurnView) -> Finish | AwaitApproval:
    """Render the running turn until it finishes or pauses for approval; how it did."""
    view.waiting("thinking…")
    outcome = None
    try:
        async for item in client.events():
            view.show(item)
            if isinstance(item, Finish | AwaitApproval):
                outcome = item
    finally:
        view.quiet()
    outcome = outcome or client.last_finish or client.paused
    assert outcome is not None, "a turn always finishes or pauses"
    if isinstance(outcome, Finish):
        view.finished(outcome)
    return outcome


async def ask_each(client: Client, view: TurnView, guard: Interrupts) -> bool:
    """Ask y/n for each held call, and a reason for a no; False if stdin ended first."""
    for request in client.pending_approvals:
        if request.reason:
            view.note(f"{request.call.name}: {request.reason}", "yellow")
        answer = ""
        while answer not in ("y", "yes", "n", "no"):
            found = await guard.answer(view, f"approve {call_text(request.call)}? [y/n] ")
            if found is None:
                return False
            answer = found.lower()
        if answer.startswith("y"):
            await client.approve(request.call.id)
            continue
        reason = await guard.answer(view, "reason (the model reads it; empty: none): ")
        if reason is None:
            return False
        await client.deny(request.call.id, reason)
    return True


async def settle(
    client: Client, view: TurnView, guard: Interrupts, outcome: Finish | AwaitApproval
) -> Finish | AwaitApproval:
    """Decide each pause on stdin until the turn finishes; paused still if stdin ends first."""
    while isinstance(outcome, AwaitApproval):
        if not await ask_each(client, view, guard):
            return outcome
        outcome = await follow(client, view)
    return outcome


async def apply_decisions(client: Client, view: TurnView, decisions: list[Decision]) -> int:
    """`toolreel approve` / `deny`: decide the calls named, then follow the turn; the exit code."""
    for decision in decisions:
        if decision.approve:
            await client.approve(decision.call_id)
        else:
            await client.deny(decision.call_id, decision.reason)
    if client.pending_approvals and client.phase is Phase.AWAITING_APPROVAL:
        outcome: Finish | AwaitApproval = AwaitApproval(requests=client.pending_approvals)
    else:
        outcome = await follow(client, view)
    return exit_code(outcome)


def paused_note(client: Client, view: TurnView, where: str, again: str = "") -> None:
    """Say which calls wait, and the whole command that decides them (`again`: its flags)."""
    held = client.pending_approvals
    for request in held:
        why = f" ({request.reason})" if request.reason else ""
        view.note(f"waiting for approval: {call_text(request.call)} [{request.call.id}]{why}")
    if not where:
        view.note("no --journal: the paused session is not kept", "yellow")
        return
    call = held[0].call.id if len(held) == 1 else "CALL_ID"
    session = shlex.join(["--journal", where, "--session", client.session_id])
    flags = f"{session} {again}".strip()
    view.note(f"decide with: toolreel approve {shlex.quote(call)} {flags}", "yellow")
    view.note(f"         or: toolreel deny {shlex.quote(call)} --reason TEXT {flags}", "yellow")


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


async def converse(
    options: AgentOptions,
    prompts: Prompts,
    view: TurnView,
    where: str,
    *,
    decisions: list[Decision] | None = None,
    again: str = "",
) -> int:
    """Run each prompt as a turn of one session; the exit code (0, 1, 3 paused, 130 on Ctrl-C).

    `decisions` (`toolreel approve` / `deny`) are applied to the paused turn first.
    `where` is the journal; `again`, the flags a later `approve` must repeat.
    """
    client = _client(options, view)
    worst = 0
    async with client, anyio.create_task_group() as tasks:
        guard = Interrupts(client)
        tasks.start_soon(guard.watch)
        if decisions:
            worst = await apply_decisions(client, view, decisions) % 130
        elif client.phase is Phase.AWAITING_APPROVAL:
            view.note("the session's last turn waits for approval")
            held = AwaitApproval(requests=client.pending_approvals)
            outcome = await settle(client, view, guard, held)
            worst = exit_code(outcome) % 130
        elif client.phase is not Phase.IDLE:
            view.note("finishing the turn an earlier run left unfinished")
            worst = max(worst, exit_code(await follow(client, view)) % 130)
        if prompts.interactive and sys.stdin.isatty():
            view.note(GREETING)
        while (
            client.phase is Phase.IDLE and (prompt := await guard.prompt(prompts, view)) is not None
        ):
            try:
                await client.query(prompt, images=prompts.take_images())
            except ConfigError as exc:  # text no session holds (an undecodable byte): not sent
                if not prompts.interactive:
                    raise
                view.note(f"error: {exc}", "red")
                worst = max(worst, EXIT_REFUSED)
                continue
            outcome = await follow(client, view)
            if prompts.interactive:
                outcome = await settle(client, view, guard, outcome)
            code = exit_code(outcome)
            if code == 130 and not prompts.interactive:
                worst = 130
                break
            worst = max(worst, code % 130)
        if client.phase is Phase.AWAITING_APPROVAL:
            paused_note(client, view, where, again)
            worst = EXIT_PAUSED if worst in (0, EXIT_PAUSED) else worst
        if guard.quit:
            view.out.print()  # leave the prompt's line
            worst = 130
        tasks.cancel_scope.cancel()
    if where:
        view.note(f"session {client.session_id} · {where}")
    return worst
