"""An AG-UI frontend's view of the loop: `POST /api/agui`, a held call as an interrupt, resume.

    pip install 'toolreel[web,agui]'
    python examples/agui_frontend.py

`toolreel.web.app(options)` (and `toolreel serve`) answers an AG-UI `RunAgentInput` at
`POST /api/agui` with the AG-UI event stream: what CopilotKit or `@ag-ui/client`'s
`HttpAgent` reads. This sends two runs in-process, as `HttpAgent` would: a question
whose `multiply` call is held for approval (the run ends with an interrupt), then a
run whose `resume` approves it (the call runs, the answer follows). Offline the
model is the scripted calculator on 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2

from toolreel.shell import AgentOptions, tool
from toolreel.testing import ScriptedServer, calculator
from toolreel.web import app


@tool(requires_approval=True)
def multiply(a: float, b: float) -> float:
    """Multiply two numbers (a person approves each call)."""
    return a * b


def events_of(response: httpx2.Response) -> list[dict[str, Any]]:
    """The AG-UI events of a response (`data: {json}` blocks)."""
    response.raise_for_status()
    blocks = response.text.strip().split("\n\n")
    return [json.loads(block.removeprefix("data: ")) for block in blocks]


def finished(event: dict[str, Any]) -> str:
    """How a run ended: the calls it waits for, or its answer and reason."""
    outcome = event.get("outcome")
    if outcome is not None and outcome["type"] == "interrupt":
        held = [f"{i['id']} ({i['reason']})" for i in outcome["interrupts"]]
        return "interrupt: " + ", ".join(held)
    return f"{event['result']['reason']}: {event['result']['text']}"


def describe(event: dict[str, Any]) -> str:
    """What matters in one event."""
    match event["type"]:
        case "RUN_STARTED":
            return f"thread {event['threadId']}, run {event['runId']}"
        case "TOOL_CALL_START":
            return f"{event['toolCallName']} ({event['toolCallId']})"
        case "TOOL_CALL_ARGS":
            return str(event["delta"])
        case "TOOL_CALL_RESULT":
            return str(event["content"])
        case "STEP_STARTED":
            return str(event["stepName"])
        case "RUN_FINISHED":
            return finished(event)
    return ""


def show(events: list[dict[str, Any]]) -> None:
    """One line per event: its type and what matters in it."""
    for event in events:
        kind = event["type"]
        if kind == "TEXT_MESSAGE_CONTENT":
            continue  # the text is shown whole at its end
        detail = describe(event)
        print(f"{kind:<18} {detail}".rstrip())
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    print(f"text: {text}")


async def main() -> None:
    """Run once, see the interrupt, resume with the approval."""
    with ScriptedServer(calculator) as server:
        options = AgentOptions(base_url=server.url, model="calculator", tools=[multiply])
        transport = httpx2.ASGITransport(app=app(options))
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            question = {"id": "u1", "role": "user", "content": "What is 7 times 8?"}
            first = {"threadId": "thread-1", "runId": "run-1", "messages": [question]}
            events = events_of(await http.post("/api/agui", json=first))
            show(events)
            [interrupt] = events[-1]["outcome"]["interrupts"]
            answer = {"status": "resolved", "payload": {"approved": True}}
            resume = [{"interruptId": interrupt["id"], **answer}]
            second = {"threadId": "thread-1", "runId": "run-2", "messages": [], "resume": resume}
            show(events_of(await http.post("/api/agui", json=second)))


if __name__ == "__main__":
    anyio.run(main)
