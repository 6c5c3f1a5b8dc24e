"""A scripted calculator model: a deterministic stand-in that answers arithmetic prompts.

It reads the arithmetic in the last user prompt ("What is 25 plus 17?",
"What's 7 times 8, then add 5?") and answers the way a tool-calling model
does: independent steps as parallel tool calls in one response, dependent
steps ("then ...") as chained rounds, then a final text — streamed as core
model events. It is pure (request in, events out), so any transport can serve it.
"""

from __future__ import annotations

import json
import re

import attrs

from toolreel.core import (
    ChatMessage,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolRound,
    Usage,
)

from ._openai_server import Reply

OPERATIONS = {
    "plus": "add",
    "add": "add",
    "added": "add",
    "sum": "add",
    "+": "add",
    "minus": "subtract",
    "subtract": "subtract",
    "-": "subtract",
    "times": "multiply",
    "multiplied": "multiply",
    "multiply": "multiply",
    "*": "multiply",
    "x": "multiply",
    "divided": "divide",
    "divide": "divide",
    "over": "divide",
    "/": "divide",
}
_TOKEN = re.compile(r"-?\d+(?:\.\d+)?|[a-z]+|[+*/x-]")


@attrs.frozen
class Step:
    """One tool call to make: `operation(a, b)`; `b` None means "apply to the previous result"."""

    operation: str
    a: float | None
    b: float


def _number(token: str) -> float:
    """A token as a number, integers kept integral in JSON."""
    value = float(token)
    return int(value) if value.is_integer() else value


def parse_clause(clause: str) -> Step | None:
    """The arithmetic in one clause ("25 plus 17", "add 5"), or None."""
    tokens = _TOKEN.findall(clause.lower())
    numbers = [_number(t) for t in tokens if re.fullmatch(r"-?\d+(?:\.\d+)?", t)]
    operations = [OPERATIONS[t] for t in tokens if t in OPERATIONS]
    if not operations or not numbers:
        return None
    if len(numbers) == 1:
        return Step(operation=operations[0], a=None, b=numbers[0])
    return Step(operation=operations[0], a=numbers[0], b=numbers[1])


def plan(prompt: str) -> list[list[Step]]:
    """Rounds of steps: clauses split by "then" chain; "and" inside a clause runs in parallel."""
    rounds = []
    for clause in re.split(r"\bthen\b|;", prompt, flags=re.IGNORECASE):
        steps = [parse_clause(part) for part in re.split(r"\band\b", clause, flags=re.I)]
        found = [s for s in steps if s is not None]
        if found:
            rounds.append(found)
    return rounds


def _chunks(text: str, size: int) -> list[str]:
    """`text` cut into pieces of `size` characters."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage(request: ModelRequest) -> Usage:
    """A plausible, deterministic token count."""
    size = sum(len(m.content) for m in request.messages)
    return Usage(input_tokens=20 + size // 4, output_tokens=12)


def _turn_rounds(messages: tuple[ChatMessage, ...]) -> tuple[ToolRound, ...]:
    """The rounds of the turn in progress (on the trailing assistant message)."""
    last = messages[-1]
    return last.tool_rounds if last.role == "assistant" else ()


def _last_prompt(messages: tuple[ChatMessage, ...]) -> str:
    """The text of the last user message."""
    return next((m.content for m in reversed(messages) if m.role == "user"), "")


def respond(request: ModelRequest, call_prefix: str = "call") -> list[ModelEvent]:
    """The scripted model's streamed answer to `request`."""
    rounds = _turn_rounds(request.messages)
    steps = plan(_last_prompt(request.messages))
    if len(rounds) < len(steps) and request.tool_choice != "none":
        previous = _previous_result(rounds)
        return _calls(steps[len(rounds)], previous, len(rounds), call_prefix, request)
    return _final_text(rounds, steps, request)


def _previous_result(rounds: tuple[ToolRound, ...]) -> float | None:
    """The last result of the previous round, if it was a number."""
    if not rounds or not rounds[-1].results:
        return None
    return number_in(rounds[-1].results[-1].content)


def _calls(
    steps: list[Step], previous: float | None, number: int, prefix: str, request: ModelRequest
) -> list[ModelEvent]:
    """One response with a tool call per step, arguments streamed in small fragments."""
    events: list[ModelEvent] = [TextDelta(text="Let me work that out. ")] if number == 0 else []
    for index, step in enumerate(steps):
        a = step.a if step.a is not None else (previous if previous is not None else 0)
        arguments = json.dumps({"a": a, "b": step.b})
        call_id = f"{prefix}_{number + 1}_{index + 1}"
        events.append(ToolCallStarted(index=index, call_id=call_id, name=step.operation))
        events += [
            ToolCallArgumentsDelta(index=index, fragment=piece) for piece in _chunks(arguments, 5)
        ]
    events.append(ModelResponded(finish_reason="tool_calls", usage=_usage(request)))
    return events


def _final_text(
    rounds: tuple[ToolRound, ...], steps: list[list[Step]], request: ModelRequest
) -> list[ModelEvent]:
    """The closing answer, built from the tool results it was given."""
    if not steps:
        text = "I can only do arithmetic: try 'What is 25 plus 17?'."
    elif rounds and any(r.is_error for r in rounds[-1].results):
        error = next(r.content for r in rounds[-1].results if r.is_error)
        text = f"The calculation failed: {error}"
    else:
        answers = [result.content for tool_round in rounds for result in tool_round.results]
        text = f"The answer is {answers[-1]}." if answers else "I could not calculate that."

    events: list[ModelEvent] = [TextDelta(text=piece) for piece in _chunks(text, 8)]
    events.append(ModelResponded(finish_reason="stop", usage=_usage(request)))
    return events


def _openai_turn(messages: list[dict[str, object]]) -> tuple[str, int, float | None]:
    """From chat messages: the last prompt, rounds since it, and the last tool result."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    prompt = str(messages[last_user].get("content") or "") if last_user >= 0 else ""
    since = messages[last_user + 1 :]
    rounds = sum(1 for m in since if m.get("role") == "assistant" and m.get("tool_calls"))
    results = [m for m in since if m.get("role") == "tool"]
    previous = number_in(str(results[-1].get("content"))) if results else None
    return prompt, rounds, previous


def number_in(content: str) -> float | None:
    """The number a tool returned: bare, or as the one numeric value of an object."""
    try:
        value = json.loads(content)
    except ValueError:
        return None
    if isinstance(value, dict):
        numbers = [v for v in value.values() if isinstance(v, int | float)]
        value = numbers[0] if len(numbers) == 1 else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if float(value).is_integer() else value


def openai_reply(request: dict[str, object]) -> Reply:
    """The scripted model's answer to an OpenAI chat.completions request (for ScriptedServer)."""
    messages = [m for m in request.get("messages", []) if isinstance(m, dict)]  # type: ignore[union-attr]
    prompt, rounds, previous = _openai_turn(messages)
    steps = plan(prompt)
    if rounds < len(steps) and request.get("tool_choice") != "none":
        calls = []
        for index, item in enumerate(steps[rounds]):
            a = item.a if item.a is not None else (previous if previous is not None else 0)
            calls.append(
                (
                    f"call_{rounds + 1}_{index + 1}",
                    item.operation,
                    json.dumps({"a": a, "b": item.b}),
                )
            )
        return Reply(text="Let me work that out. " if rounds == 0 else "", calls=tuple(calls))
    if not steps:
        return Reply(text="I can only do arithmetic: try 'What is 25 plus 17?'.")
    tool_messages = [m for m in messages if m.get("role") == "tool"]
    content = str(tool_messages[-1].get("content")) if tool_messages else ""
    value = number_in(content)
    if value is None:
        return Reply(text=f"The calculation did not give a number: {content}")
    return Reply(text=f"The answer is {value}.")
