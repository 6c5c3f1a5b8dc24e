"""Two scripted models and the tools they call, for the what-if tests (fork, rerun, diff).

One `ScriptedServer(arith)` on 127.0.0.1 is both models, told apart by the model the
request names. Each reads its turn's prompt "What is X+Y then times Z?":

- "arith-a" calls add(a=X, b=Y), then multiply(a=sum, b=Z), then answers "The answer
  is N." (with the system prompt in brackets, if the request has one);
- "arith-b", the new model, calls add with its arguments in the other order (the same
  call, canonically) and multiply(a=Z, b=sum) (a call the recording does not hold),
  then answers "B says N.".

A prompt starting "Publish" has either model call `publish(text=N)` (which needs
approval) before answering. A tool result that is not a number is answered
"could not compute: ..." instead of a next call. `--tools whatif_tools:TOOLS`.

The agent runs (`AGENT`, `--agent whatif_tools:AGENT`: a `Total` recorded with the
output tool `total`) are of `summed`, the same server's "sum-a" and "sum-b": each
adds the prompt's first two numbers with the helper `add`, then records the sum
("sum-b", the new model, records it off by one; a result that is not a number is
recorded as 0).
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import attrs

from toolreel.shell import AgentDefinition, AgentOptions, Client, OutputTool, tool
from toolreel.shell.scripted import Reply, text, tool_calls

#: The first prompt of the recorded sessions.
PROMPT = "What is 2+3 then times 4?"

RUNS: list[str] = []


def add(a: int, b: int) -> int:
    """Add two integers."""
    RUNS.append(f"add({a}, {b})")
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    RUNS.append(f"multiply({a}, {b})")
    return a * b


@tool(requires_approval=True)
def publish(text: str) -> str:
    """Publish a result (a person approves it first)."""
    RUNS.append(f"publish({text})")
    return f"published {text}"


TOOLS = [add, multiply, publish]


def _prompt_text(content: Any) -> str:
    """A user message's text (its parts' texts, when it carries images)."""
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _number(content: str) -> int | None:
    """A tool result as a number, if it is one."""
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def arith(body: dict[str, Any]) -> Reply:
    """Both scripted models (see the module docstring), one reply per request."""
    messages = body["messages"]
    newer = body["model"] == "arith-b"
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    start = max(index for index, message in enumerate(messages) if message["role"] == "user")
    prompt = _prompt_text(messages[start]["content"])
    x, y, z = (int(found) for found in re.findall(r"\d+", prompt)[:3])
    results = [m["content"] for m in messages[start + 1 :] if m["role"] == "tool"]
    values = [_number(result) for result in results]
    if results and values[-1] is None and len(results) < 3:
        return text(f"could not compute: {results[-1]}")
    if not results:
        if newer:
            return tool_calls(("b_add", "add", f'{{"b": {y}, "a": {x}}}'))
        return tool_calls(("a_add", "add", {"a": x, "b": y}))
    total = values[-1]
    if len(results) == 1:
        arguments = {"a": z, "b": total} if newer else {"a": total, "b": z}
        return tool_calls(("b_mul" if newer else "a_mul", "multiply", arguments))
    if len(results) == 2 and prompt.startswith("Publish"):
        return tool_calls(("pub", "publish", {"text": str(total)}))
    if prompt.startswith("Publish"):
        return text(f"Published: {results[-1]}.")
    answer = f"B says {total}." if newer else f"The answer is {total}."
    return text(answer + (f" [{system}]" if system else ""))


@attrs.frozen
class Total:
    """What the agent runs record: a sum."""

    total: int


#: The agent of the recorded agent runs: its prompt is the input, as given.
AGENT = AgentDefinition(build_prompt=str, output=OutputTool.of(Total, name="total"), helpers=[add])


def summed(body: dict[str, Any]) -> Reply:
    """Both scripted agent models (see the module docstring), one reply per request."""
    messages = body["messages"]
    if body["model"] not in {"sum-a", "sum-b"}:
        return arith(body)
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    prompt = next(_prompt_text(m["content"]) for m in messages if m["role"] == "user")
    x, y = (int(found) for found in re.findall(r"\d+", prompt)[:2])
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return tool_calls(("s_add", "add", {"a": x, "b": y}))
    total = _number(results[-1]) or 0
    total += 1 if body["model"] == "sum-b" else 0
    total *= 10 if "tenfold" in str(system) else 1
    return tool_calls(("s_out", "total", {"total": total}))


def options(server: Any, journal: Any, **changes: Any) -> AgentOptions:
    """The options of a session with both scripted models' tools, on `journal`."""
    base = AgentOptions(
        base_url=server.url, model="arith-a", tools=TOOLS, auto_execute_tools=True, journal=journal
    )
    return attrs.evolve(base, **changes)


def record(opts: AgentOptions, *prompts: str) -> None:
    """Run the prompts as the turns of session `opts.session_id`."""

    async def turns() -> None:
        async with Client(opts) as client:
            for prompt in prompts:
                await client.query(prompt)
                await client.wait()

    anyio.run(turns)
