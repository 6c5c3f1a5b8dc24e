"""The `toolreel` command's rendering: turns shown as they happen, tables, replay diffs.

The stream (text, tool calls and results) goes to stdout; the spinner, notes
and errors go to stderr, so `toolreel run ... > answer.txt` keeps the answer
clean. The spinner shows only on a terminal and stops before anything else is
written, so it never tears a line of streamed text. `_converse` drives the turns.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.status import Status
from rich.table import Table
from rich.text import Text

from toolreel.adapters import AgentError, AgentSession, Session
from toolreel.core import AwaitApproval, Finish, ToolCall, ToolResult, well_formed
from toolreel.core.notices import (
    ApprovalRequested,
    ModelChanged,
    Notice,
    ReasoningStreamed,
    RetryScheduled,
    RoundFinished,
    TextStreamed,
    ToolCallAnnounced,
    ToolResultReady,
)
from toolreel.core.outcomes import FinishReason
from toolreel.shell.engine import dollars

#: How much of a tool's result the live view shows (`toolreel show --expand` shows it all).
RESULT_LIMIT = 200


def consoles() -> tuple[Console, Console]:
    """Consoles for stdout and stderr; wide when not a terminal, so tables never truncate."""
    out_width = None if sys.stdout.isatty() else 240
    err_width = None if sys.stderr.isatty() else 240
    out = Console(highlight=False, soft_wrap=True, width=out_width)
    err = Console(stderr=True, highlight=False, soft_wrap=True, width=err_width)
    return out, err


def one_line(text: str, limit: int = RESULT_LIMIT) -> str:
    """`text` on one line (compact JSON if it is JSON), cut to `limit` characters.

    An escaped half of a surrogate pair (valid JSON) is U+FFFD once unescaped.
    """
    try:
        text = well_formed(json.dumps(json.loads(text), ensure_ascii=False))
    except ValueError:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class TurnView:
    """Shows turns as they happen: streamed text, each call and its result, a spinner meanwhile."""

    def __init__(self, out: Console, err: Console, secrets: Sequence[str | None] = ()) -> None:
        """Write the stream to `out`, the spinner and notes to `err`; never show `secrets`."""
        self.out = out
        self.err = err
        self.secrets = tuple(secret for secret in secrets if secret)
        self._status: Status | None = None
        self._line_open = False
        self._running: dict[str, str] = {}

    def waiting(self, label: str) -> None:
        """Show (or relabel) the spinner: on a terminal, and never over a line of text."""
        if not self.err.is_terminal or self._line_open:
            return
        if self._status is None:
            self._status = Status(label, console=self.err, spinner="dots")
            self._status.start()
        else:
            self._status.update(label)

    def quiet(self) -> None:
        """Stop the spinner before writing anything."""
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _end_line(self) -> None:
        """Finish a line of streamed text, if one is open."""
        if self._line_open:
            self.out.print()
            self._line_open = False

    def show(self, item: Notice | Finish | AwaitApproval) -> None:
        """Render one notice of the running turn (or its `Finish`).

        A call's start and its argument fragments (`ToolCallStreaming`,
        `ToolArgumentsStreamed`) are not shown: the call is printed whole once announced.
        """
        match item:
            case TextStreamed(text=piece):
                self.quiet()
                self.out.print(Text(piece), end="")
                self._line_open = not piece.endswith("\n")
            case ReasoningStreamed():
                self.waiting("reasoning…")
            case ToolCallAnnounced(call=call):
                self.quiet()
                self._end_line()
                self.out.print(
                    Text.assemble(("→ ", "cyan"), (call.name, "bold cyan"), " ")
                    + Text(one_line(call.arguments), style="cyan")
                )
                self._running[call.id] = call.name
                self._tools_running()
            case ToolResultReady(result=result):
                self.quiet()
                self.out.print(result_text(result))
                self._running.pop(result.call_id, None)
                self._tools_running()
            case RoundFinished():
                self._running.clear()
                self.waiting("thinking…")
            case RetryScheduled(retry=retry, seconds=seconds, message=message):
                self.quiet()
                void = " (the text above is void)" if self._line_open else ""
                self._end_line()
                self.note(f"retry {retry} in {seconds:.1f}s: {one_line(message)}{void}", "yellow")
                self.waiting("waiting to retry…")
            case ModelChanged(model=model, previous=previous, message=message):
                self.quiet()
                void = " (the text above is void)" if self._line_open else ""
                self._end_line()
                self.note(
                    f"{previous} failed ({one_line(message)}): asking {model}{void}", "yellow"
                )
                self.waiting("thinking…")
            case ApprovalRequested(call=call, reason=reason):
                self.quiet()
                self._end_line()
                self._running.pop(call.id, None)
                why = f": {reason}" if reason else ""
                self.note(f"  ⏸ {call.name} waits for approval{why}", "yellow")
                self._tools_running()
            case Finish() | AwaitApproval():
                self.quiet()
                self._end_line()
            case _:
                pass

    def _tools_running(self) -> None:
        """The spinner names the tools still running."""
        if self._running:
            self.waiting("running " + ", ".join(dict.fromkeys(self._running.values())) + "…")

    def note(self, text: str, style: str = "dim") -> None:
        """One line on stderr (secrets masked)."""
        self.quiet()
        self._end_line()
        for secret in self.secrets:
            text = text.replace(secret, "***")
        self.err.print(Text(text, style=style))

    def error(self, text: str) -> None:
        """One `error: ...` line on stderr."""
        self.note("error: " + " ".join(text.split()), "red")

    def finished(self, finish: Finish) -> None:
        """How the turn ended: a dim footer, `interrupted`, or the error."""
        self.quiet()
        self._end_line()
        if finish.reason is FinishReason.COMPLETED:
            self.note(finish_line(finish))
        elif finish.reason is FinishReason.CANCELLED:
            self.note("interrupted", "yellow")
        else:
            self.error(failure_text(finish))


def call_text(call: ToolCall) -> str:
    """A call as `name(arguments)`, the arguments on one line."""
    return f"{call.name}({one_line(call.arguments)})"


def result_text(result: ToolResult) -> Text:
    """A tool's result (or error) on one indented line; an image as its placeholder."""
    content = " ".join([one_line(result.content), *(i.label() for i in result.images)]).strip()
    if result.is_error:
        return Text.assemble(("  ✗ ", "red"), (f"{result.name}: ", "red"), content)
    return Text.assemble(("  ← ", "green"), (f"{result.name}: ", "green"), content)


def finish_line(finish: Finish) -> str:
    """A finished turn in one phrase: reason, iterations, tokens."""
    plural = "s" if finish.iterations != 1 else ""
    return (
        f"{finish.reason.value} · {finish.iterations} iteration{plural} · "
        f"{finish.usage.input_tokens} in / {finish.usage.output_tokens} out tokens"
    )


def failure_text(finish: Finish) -> str:
    """Why a turn did not complete, in one line (the provider's words where there are any)."""
    if finish.error is not None:
        return f"{finish.error.kind}: {finish.error.message}"
    if finish.over_budget is not None:
        return finish.over_budget.message
    if finish.reason is FinishReason.MAX_ITERATIONS:
        plural = "s" if finish.iterations != 1 else ""
        return (
            f"stopped after {finish.iterations} iteration{plural} with the model still calling "
            "tools (raise --max-iterations)"
        )
    if finish.reason is FinishReason.BLOCKED:
        return f"blocked: {finish.block_reason or 'no reason given'}"
    return str(finish.reason.value)


def last_reason(session: Session) -> str:
    """How a session's last turn ended ("unfinished" if it never did, "-" if it has none).

    A turn paused for approval is "awaiting approval" with how many calls wait.
    """
    if session.approvals:
        return f"awaiting approval ({len(session.approvals)})"
    if not session.turns:
        return "-"
    reason = session.turns[-1].reason
    return reason.value if reason is not None else "unfinished"


def sessions_table(
    sessions: Sequence[Session | AgentSession], costs: Sequence[float | None] = ()
) -> Table:
    """Stored sessions: id, turns, events, last finish reason, tokens, their `costs`, and
    where a fork or a rerun came from (a column only when one of them is one).

    A cost is None where the model's price is unknown; no costs: no cost column.
    """
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("session", no_wrap=True)
    table.add_column("turns", justify="right")
    table.add_column("events", justify="right")
    table.add_column("last finish")
    table.add_column("tokens (in / out)", justify="right")
    if costs:
        table.add_column("cost", justify="right")
    origins = any(session.origin is not None for session in sessions)
    if origins:  # a fork or a rerun says where it came from
        table.add_column("from")
    for number, session in enumerate(sessions):
        usage = session.usage
        if isinstance(session, AgentSession):
            turns, last = "agent run", _agent_ended(session)
        else:
            turns, last = str(len(session.turns)), last_reason(session)
        row: list[Text | str] = [
            Text(session.session_id),
            turns,
            str(session.events),
            last,
            f"{usage.input_tokens} / {usage.output_tokens}",
        ]
        if costs:
            cost = costs[number]
            row.append("unknown" if cost is None else dollars(cost))
        if origins:
            row.append(_origin(session))
        table.add_row(*row)
    return table


def _origin(session: Session | AgentSession) -> str:
    """Where a session came from, short: "fork of abc@12", "rerun of abc", or ""."""
    origin = session.origin
    if origin is None:
        return ""
    if origin.kind == "rerun":
        return f"rerun of {origin.session_id}"
    return f"fork of {origin.session_id}@{origin.seq}"


def replay_ok(session: Session | AgentSession) -> Text:
    """A session that replayed to the recorded effects."""
    if isinstance(session, AgentSession):
        return Text.assemble(("OK", "green"), " ", session.session_id, _agent_counts(session))
    turns, events = len(session.turns), session.events
    counts = (
        f" · {turns} turn{'s' if turns != 1 else ''} · {events} event{'s' if events != 1 else ''}"
    )
    return Text.assemble(("OK", "green"), " ", session.session_id, counts)


def _agent_counts(session: AgentSession) -> str:
    """An agent run's size and how it ended, for `replay_ok`."""
    return f" · agent run · {session.events} events · {_agent_ended(session)}"


def _agent_ended(session: AgentSession) -> str:
    """How an agent run ended: its error code, "output", "awaiting approval (N)" or "unfinished"."""
    outcome = session.outcome
    if outcome is None and session.approvals:
        return f"awaiting approval ({len(session.approvals)})"
    if outcome is None:
        return "unfinished"
    return outcome.code.value if isinstance(outcome, AgentError) else "output"


DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("+", "green"), ("-", "red"), ("@@", "cyan"))


def diff_text(text: str) -> Text:
    """A divergence report with its diff lines coloured (plain when not a terminal)."""
    result = Text()
    for line in text.splitlines():
        style = next((style for start, style in DIFF_STYLES if line.startswith(start)), "")
        result.append(line + "\n", style=style)
    return result
