"""README's "Serving the loop to a browser" example runs as written (against the scripted model)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import httpx2

from toolreel.shell.scripted import ScriptedServer, calculator

README = Path(__file__).resolve().parent.parent.parent / "README.md"
OPTIONS = 'AgentOptions(model="gpt-4o-mini",'


def test_the_mount_and_own_route_example_serves_turns(tmp_path, monkeypatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    [block] = [b for b in blocks if "toolreel_app(options))," in b]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    with ScriptedServer(calculator) as server:
        pointed = block.replace(OPTIONS, f"{OPTIONS} base_url={server.url!r},")
        exec(compile(pointed, str(README), "exec"), namespace)

        async def post(path: str, body: Any) -> str:
            transport = httpx2.ASGITransport(app=namespace["site"])
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://localhost"
            ) as client:
                response = await client.post(path, json=body)
                assert response.status_code == 200, response.text
                return response.text

        asked = anyio.run(post, "/ask", {"question": "What is 2 plus 2?", "session": "s"})
        user = {"role": "user", "parts": [{"type": "text", "text": "What is 3 plus 3?"}]}
        chat = {"id": "c", "messages": [user], "trigger": "submit-message"}
        mounted = anyio.run(post, "/agent/api/chat", chat)
    assert "The answer is 4." in _text(asked)
    assert "The answer is 6." in _text(mounted)
    assert (tmp_path / "sessions.db").exists()


def _text(stream: str) -> str:
    """The text deltas of a UI message stream, joined."""
    return "".join(re.findall(r'"type":"text-delta","id":"[^"]+","delta":"([^"]*)"', stream))
