"""`toolreel serve` as a real process on 127.0.0.1: the scripted model, a disconnect, a model error.

One server (scripted calculator model, a SQLite journal, `--max-iterations 2`, the
calculator's tools with an `add` that hangs on 999) serves every test here but the
model error, which needs a server pointed at a model that fails.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import pytest
from web_support import HERE, check_ui

from toolreel.cli import main
from toolreel.shell.scripted import ScriptedServer, http_error

T = TypeVar("T")
TOOLREEL = str(Path(sys.executable).parent / "toolreel")
#: Variables that would make `serve` talk to a real model.
REAL_MODEL_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "TOOLREEL_BASE_URL",
    "TOOLREEL_PROVIDER",
    "TOOLREEL_MODEL",
)


class Served:
    """A running `toolreel serve`: its URL, its folder, its process."""

    def __init__(self, args: list[str], folder: Path) -> None:
        """Start it and wait until it says where it listens."""
        env = {k: v for k, v in os.environ.items() if k not in REAL_MODEL_ENV}
        env.update(PYTHONPATH=str(HERE), TOOLREEL_WEB_MARKS=str(folder))
        self.folder = folder
        self.process = subprocess.Popen(
            [TOOLREEL, "serve", "--port", "0", *args],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        first = self.lines.get(timeout=60)
        assert " on http://127.0.0.1:" in first, first
        self.first_line = first
        self.url = first.split(" on ")[1].split()[0]

    def _read(self) -> None:
        """Keep the server's stderr lines."""
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line)

    def stop(self) -> int:
        """Ctrl-C, as a terminal would; the exit code."""
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The scripted server of this module."""
    folder = tmp_path_factory.mktemp("serve")
    server = Served(
        [
            "--journal",
            str(folder / "web.db"),
            "--tools",
            "web_slow_tools:TOOLS",
            "--max-iterations",
            "2",
        ],
        folder,
    )
    yield server
    assert server.stop() == 130  # Ctrl-C: the turns recorded, the journal closed


def chat(url: str, text: str, chat_id: str) -> list[dict[str, Any]]:
    """POST /api/chat; the parts of its UI message stream."""
    user = {"id": "u", "role": "user", "parts": [{"type": "text", "text": text}]}
    body = {"id": chat_id, "messages": [user], "trigger": "submit-message", "messageId": None}
    response = httpx2.post(f"{url}/api/chat", json=body, timeout=30)
    assert response.status_code == 200, response.text
    events = [e for e in response.text.split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    parts = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    check_ui(parts)
    return parts


def answer(parts: list[dict[str, Any]]) -> str:
    """The text of the message's last step."""
    last = max(i for i, p in enumerate(parts) if p["type"] == "start-step")
    return "".join(p["delta"] for p in parts[last:] if p["type"] == "text-delta")


def eventually(check: Callable[[], T | None], what: str) -> T:
    """What `check` returns once it returns something (a bounded wait: 20 s)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def test_serve_without_a_key_serves_the_scripted_model_and_says_so(served: Served) -> None:
    assert "offline scripted calculator model" in served.first_line
    info = httpx2.get(f"{served.url}/api/info").json()
    assert info["scripted"] is True and info["model"] == "scripted-calculator"
    assert httpx2.get(f"{served.url}/").headers["content-type"].startswith("text/html")


def test_rounds_parallel_calls_a_tool_error_and_the_cap_over_http(served: Served) -> None:
    parallel = chat(served.url, "What is 7 times 8 and 2 plus 3?", "web-parallel")
    first_step = parallel[: [p["type"] for p in parallel].index("finish-step")]
    assert [p["toolName"] for p in first_step if p["type"] == "tool-input-available"] == [
        "multiply",
        "add",
    ]
    assert answer(parallel) == "The answer is 5."
    failed = chat(served.url, "What is 1 divided by 0?", "web-error")
    assert [p["errorText"] for p in failed if p["type"] == "tool-output-error"] == [
        "ValueError: Cannot divide by zero"
    ]
    capped = chat(served.url, "What's 7 times 8, then add 5?", "web-cap")
    assert capped[-1]["finishReason"] == "tool-calls"
    assert capped[-1]["messageMetadata"]["max_iterations_reached"] is True


def test_a_client_that_disconnects_cancels_the_turn_and_the_chat_goes_on(served: Served) -> None:
    body = {
        "id": "web-slow",
        "messages": [{"role": "user", "parts": [{"type": "text", "text": "What is 999 plus 1?"}]}],
        "trigger": "submit-message",
    }
    with (
        httpx2.Client(base_url=served.url, timeout=30) as http,
        http.stream("POST", "/api/chat", json=body) as response,
    ):
        for line in response.iter_lines():
            if '"tool-input-available"' in line:
                break
        eventually((served.folder / "started").exists, "the tool started")
    # The connection is closed with the tool still running.
    eventually((served.folder / "cancelled").exists, "the tool was stopped")

    def cancelled() -> dict[str, Any] | None:
        detail = httpx2.get(f"{served.url}/api/sessions/web-slow").json()
        turns = detail["turns"]
        return detail if turns and turns[0]["outcome"] == "cancelled" else None

    [turn] = eventually(cancelled, "the turn journaled as cancelled")["turns"]
    [[slow_call]] = [r["calls"] for r in turn["rounds"]]
    assert slow_call["name"] == "add" and slow_call["is_error"] is True
    assert "Cancelled" in slow_call["content"]

    parts = chat(served.url, "What is 2 plus 3?", "web-slow")  # the same chat goes on
    assert answer(parts) == "The answer is 5."
    detail = httpx2.get(f"{served.url}/api/sessions/web-slow").json()
    assert [t["outcome"] for t in detail["turns"]] == ["cancelled", "completed"]
    listed = httpx2.get(f"{served.url}/api/sessions").json()["sessions"]
    row = {"id": "web-slow", "title": "What is 999 plus 1?", "turns": 2, "rounds": 2}
    assert {**row, "outcome": "completed", "approvals": 0} in listed


def test_a_model_error_reaches_the_browser_as_an_error_part(tmp_path: Path) -> None:
    with ScriptedServer([http_error(401, "invalid api key")]) as model:
        server = Served(["--base-url", model.url, "--model", "m"], tmp_path)
        try:
            parts = chat(server.url, "hi", "web-401")
        finally:
            server.stop()
    [error] = [p["errorText"] for p in parts if p["type"] == "error"]
    assert error.startswith("HTTP 401: invalid api key")
    assert parts[-1]["finishReason"] == "error"


def test_a_port_in_use_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 1
    assert capsys.readouterr().err == (
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )
