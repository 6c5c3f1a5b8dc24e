"""A scripted calculator model: a deterministic stand-in that answers arithmetic prompts.

It reads the arithmetic in the last user prompt ("What is 25 plus 17?",
"What's 7 times 8, then add 5?") and answers the way a tool-calling model
does: independent steps as parallel tool calls in one response, dependent
steps ("then ...") as chained rounds, then a final text. `calculator` maps an
OpenAI chat.completions request to the scripted `Reply` a `ScriptedServer`
streams back, so the whole stack — adapter, shell, journal — runs offline
(public as `toolreel.testing.calculator`).
"""

from __future__ import annotations

import json
import re

import attrs

from toolreel.core.record import Value

from ._server import Reply

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


@attrs.frozen(repr=False, eq=False)
class Step(Value):
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


def calculator(request: dict[str, object]) -> Reply:
    """The calculator model: its answer to a chat.completions request body.

    Give it to a server, `ScriptedServer(calculator)`, and point a `Client`
    at `server.url`. It reads the arithmetic in the last user prompt ("What
    is 25 plus 17?", "What's 7 times 8, then add 5?") and calls the tools
    `add`, `subtract`, `multiply` and `divide` with arguments `{"a": ...,
    "b": ...}` (call ids `call_R_N`: the N-th call of the session's R-th tool
    round, so no id repeats in a session, as a provider's would not):
    independent steps in one response (parallel calls), steps
    after "then" in later rounds, each on the previous result. Once the
    results are in, it answers "The answer is N." with the last one (a number,
    or an object holding one number, such as `{"result": 42}`; anything else
    it quotes back). A prompt without arithmetic gets a one-line reply saying
    what it can do; with `tool_choice` "none" it calls nothing and answers
    from the results it has.
    """
    given = request.get("messages")
    messages = [m for m in given if isinstance(m, dict)] if isinstance(given, list) else []
    prompt, rounds, previous = _openai_turn(messages)
    earlier = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
    steps = plan(prompt)
    if rounds < len(steps) and request.get("tool_choice") != "none":
        calls = []
        for index, item in enumerate(steps[rounds]):
            a = item.a if item.a is not None else (previous if previous is not None else 0)
            calls.append(
                (
                    f"call_{earlier + 1}_{index + 1}",
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
