"""One stable, human-readable rendering of a session (Markdown-like).

An agent run renders as its attempts and outcome (`render_agent_transcript`).
Stable means the same session always renders to the same bytes: no clock
times, no run-specific ids unless asked (`ids=True`), JSON pretty-printed with
sorted keys, numbers as Python's shortest round-trip repr. Tool rounds show in
full, or collapsed to one line each turn (`expand=False`), as chat UIs show
them. A model call that failed and was retried shows as a `↻` line where it
happened (before the round, or the answer, its retry produced). A turn paused
for approval ends with its held calls, as `⏸ awaiting approval` lines, and says
it waits for approval (not that it is unfinished).

`hide=` leaves out what varies from one recording of the same conversation to
the next (`HIDEABLE`): "usage" (token counts), "ids" (session and call ids,
even with `ids=True`), "timings" (retry waits), "retries" (the `↻` lines).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable

from toolreel.core import (
    ChatMessage,
    ConfigError,
    ImagePart,
    OutputSpec,
    PlainOutput,
    ReflectiveOutput,
    ToolCall,
    ToolResult,
    ToolRound,
    Usage,
    well_formed,
)
from toolreel.core.budget import Price
from toolreel.core.compaction import Compaction, KeepTokens, KeepTurns, Summarise
from toolreel.core.notices import ApprovalRequested, ContextCompacted

from ._agent_outcome import AgentOutput
from ._retries import Retry
from ._session import AgentSession, Session, TurnSummary

#: What `hide=` can leave out of a transcript.
HIDEABLE = frozenset({"ids", "retries", "timings", "usage"})


def hidden(names: Iterable[str]) -> frozenset[str]:
    """`names` checked against `HIDEABLE` (an unknown one is a `ConfigError`)."""
    wanted = frozenset([names] if isinstance(names, str) else names)
    if not wanted <= HIDEABLE:
        unknown = ", ".join(sorted(wanted - HIDEABLE))
        raise ConfigError("hide", unknown, "names among " + ", ".join(sorted(HIDEABLE)))
    return wanted


def counted(number: int, noun: str) -> str:
    """`number` and `noun`, plural unless it is one: "1 iteration", "2 iterations"."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _retry_lines(retries: Iterable[Retry], hide: Collection[str]) -> list[str]:
    """One `↻` line per retried model call (none when retries are hidden)."""
    if "retries" in hide:
        return []
    lines = []
    for retry in retries:
        status = f"HTTP {retry.status}: " if retry.status is not None else ""
        status = "" if retry.message.startswith(status) else status  # already said
        wait = "" if "timings" in hide else f" after {retry.seconds:g} s"
        then = f"retry {retry.retry}{wait}" if retry.model is None else f"asking {retry.model}"
        lines.append(f"↻ model call {retry.iteration} failed ({status}{retry.message}): {then}")
    return [*lines, ""] if lines else []


def _before(retries: Iterable[Retry], iteration: int, last: bool) -> list[Retry]:
    """The retries of model call `iteration` (and every later one, for the `last` place)."""
    return [r for r in retries if r.iteration == iteration or (last and r.iteration > iteration)]


def _pretty(text: str) -> str:
    """JSON text pretty-printed with sorted keys; other text as it is.

    An escaped half of a surrogate pair (valid JSON) is U+FFFD once unescaped.
    """
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return well_formed(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def _fenced(text: str, language: str = "") -> list[str]:
    """A fenced block (its fence longer than any run of backticks inside)."""
    fence = "```"
    while fence in text:
        fence += "`"
    return [f"{fence}{language}", text, fence]


def _call_lines(call: ToolCall, result: ToolResult | None, ids: bool) -> list[str]:
    """One call with its arguments and its result or error."""
    label = f"→ {call.name}" + (f" [{call.id}]" if ids else "")
    lines = [label, *_fenced(_pretty(call.arguments), "json")]
    if result is None:
        return [*lines, "← (no result)"]
    head = "← error:" if result.is_error else "← result:"
    return [*lines, head, *_fenced(_pretty(result.content)), *_image_lines(result.images)]


def _image_lines(images: Iterable[ImagePart]) -> list[str]:
    """A placeholder line per image: media type and size (or URL), never the bytes."""
    return [image.label() for image in images]


def _with_images(text: str, images: tuple[ImagePart, ...]) -> str:
    """Text followed by its images' placeholders."""
    return " ".join([text, *_image_lines(images)]) if images else text


def _round_lines(number: int, tool_round: ToolRound, ids: bool) -> list[str]:
    """One round: the text before its calls, then each call and its result."""
    lines = [f"### Round {number}"]
    if tool_round.assistant_text.strip():
        lines.append(f"Assistant: {tool_round.assistant_text.strip()}")
    results = {result.call_id: result for result in tool_round.results}
    for call in tool_round.tool_calls:
        lines += _call_lines(call, results.get(call.id), ids)
    return [*lines, ""]


def _usage(usage: Usage, price: Price | None = None) -> str:
    """Token counts in one phrase (the cached ones among the input), and the cost at `price`."""
    cached = [
        f"{count} {what}"
        for count, what in (
            (usage.cache_read_tokens, "cached"),
            (usage.cache_write_tokens, "written to cache"),
        )
        if count
    ]
    sent = f"{usage.input_tokens} in" + (f" ({', '.join(cached)})" if cached else "")
    text = f"{sent} / {usage.output_tokens} out tokens"
    extra = ", ".join(f"{name} {count}" for name, count in usage.extra)
    text = f"{text} ({extra})" if extra else text
    return text if price is None else f"{text} · {dollars(price.cost(usage))}"


def dollars(amount: float) -> str:
    """A cost in USD: cents from $1 up, else 4 significant digits ("$1.50", "$0.0123")."""
    return f"${amount:.2f}" if amount >= 1 else f"${amount:.4g}"


def _summary_line(
    turn: TurnSummary, hide: Collection[str], held: int = 0, price: Price | None = None
) -> str:
    """How the turn ended (`held`: how many of its calls wait for approval)."""
    if turn.reason is None and held:
        return f"_awaiting approval · {counted(held, 'call')} held_"
    if turn.reason is None:
        return "_unfinished_"
    parts = [turn.reason.value, counted(turn.iterations, "iteration")]
    if "usage" not in hide:
        parts.append(_usage(turn.usage, price))
    if turn.max_iterations_reached:
        parts.insert(1, "max iterations reached")
    if turn.error is not None:
        parts.append(f"error {turn.error.kind}: {turn.error.message}")
    if turn.block_reason:
        parts.append(f"blocked: {turn.block_reason}")
    return "_" + " · ".join(parts) + "_"


def _approval_lines(requests: Iterable[ApprovalRequested], ids: bool) -> list[str]:
    """Each call a paused turn holds for approval, with its arguments."""
    lines = []
    for request in requests:
        label = f"⏸ awaiting approval: {request.call.name}" + (
            f" [{request.call.id}]" if ids else ""
        )
        lines += [label + (f" ({request.reason})" if request.reason else "")]
        lines += [*_fenced(_pretty(request.call.arguments), "json"), ""]
    return lines


def _turn_lines(
    number: int,
    turn: TurnSummary,
    expand: bool,
    ids: bool,
    hide: Collection[str],
    *,
    held: tuple[ApprovalRequested, ...] = (),
    price: Price | None = None,
) -> list[str]:
    """One turn: prompt, rounds, answer, calls it holds, summary (retries where they happened)."""
    lines = [f"## Turn {number}", "", f"**User:** {_with_images(turn.prompt, turn.images)}", ""]
    lines += _compaction_lines(turn.compactions)
    answer = turn.answer
    rounds = answer.tool_rounds if answer else ()
    if rounds and expand:
        for index, tool_round in enumerate(rounds, start=1):
            lines += _retry_lines(_before(turn.retries, index, False), hide)
            lines += _round_lines(index, tool_round, ids)
        lines += _retry_lines(_before(turn.retries, len(rounds) + 1, True), hide)
    else:
        lines += _retry_lines(turn.retries, hide)
    if rounds and not expand:
        names = ", ".join(call.name for r in rounds for call in r.tool_calls)
        lines += [f"▸ {counted(len(rounds), 'tool round')}: {names}", ""]
    if answer is not None and answer.content:
        lines += [f"**Assistant:** {answer.content}", ""]
    lines += _approval_lines(held, ids)
    return [*lines, _summary_line(turn, hide, len(held), price), ""]


def _policy(policy: Compaction) -> str:
    """A compaction policy in a few words."""
    match policy:
        case KeepTurns(turns=turns):
            said = f"the last {counted(turns, 'turn')}"
        case KeepTokens(tokens=tokens):
            said = f"the latest turns within {tokens:,} tokens"
        case Summarise(within=within, model=model):
            said = f"{_policy(within)}, older turns summarised" + (f" by {model}" if model else "")
    pinned = f", the first {counted(policy.pinned, 'message')} pinned" if policy.pinned else ""
    return said + (pinned if not isinstance(policy, Summarise) else "")


def _compaction_lines(compactions: Iterable[ContextCompacted]) -> list[str]:
    """Where the turn's requests were compacted: the messages left out, the summary."""
    lines = []
    for told in compactions:
        why = " (the provider said the context was too long)" if told.too_long else ""
        count = "" if told.tokens is None else f", ~{told.tokens} tokens carried"
        left = (
            f"messages {told.first + 1} to {told.start}"
            if told.start > told.first + 1
            else f"message {told.start}"
        )
        lines.append(f"✂ context compacted: {left} of the history left out{why}{count}")
        if told.summary is not None:
            lines.append(f"  summary: {told.summary}")
        lines.append("")
    return lines


def _origin_lines(session: Session | AgentSession) -> list[str]:
    """Where a fork or a rerun came from, in one line (none for a session that began so)."""
    return [] if session.origin is None else [f"from: {session.origin.describe()}"]


def render_transcript(
    session: Session | AgentSession,
    *,
    expand: bool = True,
    ids: bool = False,
    hide: Iterable[str] = (),
    price: Price | None = None,
) -> str:
    """The session as stable Markdown-like text (an agent run's: `render_agent_transcript`).

    `hide` names what to leave out (`HIDEABLE`: "usage", "ids", "timings",
    "retries"); another name is a `ConfigError`. With the model's `price`, each
    turn's and the session's usage says what it cost (hidden with "usage").
    """
    if isinstance(session, AgentSession):
        return render_agent_transcript(session, ids=ids, hide=hide, price=price)
    hide = hidden(hide)
    ids = ids and "ids" not in hide
    lines = [f"# Session {session.session_id}" if ids else "# Session", ""]
    config = session.config
    lines += _origin_lines(session)
    lines += [f"model: {config.model}"]
    settings = [
        f"{name} {value:g}"
        for name, value in (("temperature", config.temperature), ("max_tokens", config.max_tokens))
        if value is not None
    ]
    if settings:
        lines += ["settings: " + ", ".join(settings)]
    if config.system_prompt:
        lines += [f"system: {config.system_prompt}"]
    if config.tools:
        lines += ["tools: " + ", ".join(spec.name for spec in config.tools)]
    if config.compaction is not None:
        lines += [f"compaction: {_policy(config.compaction)}"]
    lines.append("")
    last = len(session.turns)
    for number, turn in enumerate(session.turns, start=1):
        held = session.approvals if number == last else ()  # the last turn is paused
        lines += _turn_lines(number, turn, expand, ids, hide, held=held, price=price)
    turns = len(session.turns)
    total = [f"Total: {counted(turns, 'turn')}"]
    total += [] if "usage" in hide else [_usage(session.usage, price)]
    lines.append(" · ".join(total))
    return "\n".join(lines) + "\n"


# --- agent runs ---------------------------------------------------------------------
# Its config, each attempt with its iterations' calls and results and the
# validation problems that ended it, then the output or the error. An attempt
# begins at each user message of the run's history (the prompt, then each
# validation feedback); each tool round of an attempt's assistant message is one
# iteration.


def _attempts(history: tuple[ChatMessage, ...]) -> list[list[ChatMessage]]:
    """The history cut at every user message: one list per attempt."""
    attempts: list[list[ChatMessage]] = []
    for message in history:
        if message.role == "user" or not attempts:
            attempts.append([])
        attempts[-1].append(message)
    return attempts


def _attempt_lines(
    number: int,
    messages: list[ChatMessage],
    session: AgentSession,
    ids: bool,
    hide: Collection[str],
) -> list[str]:
    """One attempt: its prompt (the first), its iterations, the problems found in its output."""
    retries = [retry for retry in session.retries if retry.scope == number]
    lines = [f"## Attempt {number}", ""]
    if number == 1 and messages and messages[0].role == "user":
        lines += [f"**User:** {_with_images(messages[0].content, messages[0].images)}", ""]
    rounds = [r for message in messages if message.role == "assistant" for r in message.tool_rounds]
    for index, tool_round in enumerate(rounds, start=1):
        lines += _retry_lines(_before(retries, index, False), hide)
        lines += _round_lines(index, tool_round, ids)
    lines += _retry_lines(_before(retries, len(rounds) + 1, True), hide)
    texts = [m.content for m in messages if m.role == "assistant" and m.content.strip()]
    lines += [line for text in texts for line in (f"**Assistant:** {text.strip()}", "")]
    for errors in session.validation_errors:
        if errors.attempt == number:
            lines += ["Validation failed:", *(f"- {problem}" for problem in errors.problems), ""]
    return lines


def _outcome_lines(session: AgentSession) -> list[str]:
    """How the run ended: the output, the error, or unfinished."""
    outcome = session.outcome
    if outcome is None:
        return ["_unfinished_", ""]
    if isinstance(outcome, AgentOutput):
        return ["## Output", "", *_fenced(_pretty(outcome.output), "json"), ""]
    return [f"## Error {outcome.code.value}", "", outcome.message, ""]


def output_tool(output: OutputSpec) -> str:
    """The output tool's name ("" for a text answer)."""
    return output.tool.name if isinstance(output, PlainOutput | ReflectiveOutput) else ""


def render_agent_transcript(
    session: AgentSession,
    *,
    ids: bool = False,
    hide: Iterable[str] = (),
    price: Price | None = None,
) -> str:
    """The agent run as stable Markdown-like text (`hide`, `price` as for `render_transcript`)."""
    hide = hidden(hide)
    ids = ids and "ids" not in hide
    config = session.config
    lines = [f"# Agent run {session.session_id}" if ids else "# Agent run", ""]
    lines += _origin_lines(session)
    lines.append(f"model: {config.model}")
    if config.system_prompt:
        lines.append(f"system: {config.system_prompt}")
    lines.append(f"output: {output_tool(config.output)}")
    if config.tools:
        lines.append("helpers: " + ", ".join(spec.name for spec in config.tools))
    lines.append("")
    for number, messages in enumerate(_attempts(session.history), start=1):
        lines += _attempt_lines(number, messages, session, ids, hide)
    lines += _outcome_lines(session)
    attempts = session.attempts
    total = [
        f"Total: {counted(attempts, 'attempt')}",
        counted(session.iterations, "iteration"),
    ]
    total += [] if "usage" in hide else [_usage(session.usage, price)]
    lines.append(" · ".join(total))
    return "\n".join(lines) + "\n"
