"""A call whose arguments hold `NaN` or `Infinity` (Python's json reads them; JSON has none).

The tool gets the value the model wrote and the journal keeps it, but every
stream part and answer the web sends is JSON a browser parses: the non-finite
numbers go as null, as the browser's own `JSON.stringify` sends them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2

from toolreel.adapters import EventModel, SQLiteJournal, load_session
from toolreel.core import ModelResponded, TextDelta, ToolCallArgumentsDelta, ToolCallStarted
from toolreel.shell import AgentOptions, tool
from toolreel.web import app

JSON = {"content-type": "application/json"}
got: list[float] = []


@tool
def scale(factor: float, limit: float) -> str:
    """Scale by a factor, up to a limit."""
    got.extend((factor, limit))
    return "scaled"


def answer(request: Any) -> list[Any]:
    """A call with NaN and Infinity as arguments, then an answer."""
    if len(request.messages) == 1:
        return [
            ToolCallStarted(index=0, call_id="c1", name="scale"),
            ToolCallArgumentsDelta(index=0, fragment='{"factor": NaN, "limit": -Infinity}'),
            ModelResponded(finish_reason="tool_calls"),
        ]
    return [TextDelta(text="done"), ModelResponded()]


def strict(text: str) -> Any:
    """`text` read as a browser reads JSON: NaN and the infinities refused."""

    def refuse(word: str) -> Any:
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def responses(path: Path, *calls: tuple[str, str, Any]) -> list[httpx2.Response]:
    """The responses to these requests, in order, from one app journaling to `path`."""

    async def send() -> list[httpx2.Response]:
        journal = SQLiteJournal(path)
        options = AgentOptions(model="m", tools=[scale], auto_execute_tools=True)
        web = app(options, journal=journal, model=EventModel(answer))
        transport = httpx2.ASGITransport(app=web)
        try:
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
                return [
                    await c.request(m, url, content=body and json.dumps(body), headers=JSON)
                    for m, url, body in calls
                ]
        finally:
            journal.close()

    return anyio.run(send)


def data_lines(stream: str) -> list[Any]:
    """Every `data:` line of an SSE stream, read strictly (the UI stream's last is [DONE])."""
    lines = stream.splitlines()
    found = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    return [strict(line) for line in found if line != "[DONE]"]


def test_non_finite_arguments_reach_the_tool_and_the_browser_gets_json(tmp_path: Path) -> None:
    got.clear()
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "scale it"}]}
    chat, events, detail = responses(
        tmp_path / "j.db",
        ("POST", "/api/chat", {"id": "s1", "messages": [user], "trigger": "submit-message"}),
        ("POST", "/api/events", {"message": "scale it", "id": "s2"}),
        ("GET", "/api/sessions/s1", None),
    )
    assert [r.status_code for r in (chat, events, detail)] == [200, 200, 200]
    parts = data_lines(chat.text)
    [available] = [p for p in parts if p["type"] == "tool-input-available"]
    assert available["input"] == {"factor": None, "limit": None}
    [call] = [p for p in data_lines(events.text) if p.get("name") == "scale" and "arguments" in p]
    assert call["arguments"] == {"factor": None, "limit": None}
    assert "scale" in json.dumps(strict(detail.text))
    assert got[0] != got[0] and got[1] == float("-inf")  # NaN, -inf: twice, one per session
    journal = SQLiteJournal(tmp_path / "j.db")
    try:
        history = load_session(journal, "s1").history
        [run] = [c for m in history for r in m.tool_rounds for c in r.tool_calls]
    finally:
        journal.close()
    assert run.arguments == '{"factor": NaN, "limit": -Infinity}'  # kept as the model wrote it
