"""`toolreel serve --temporal HOST:PORT`: the page and the API over session workflows that
`toolreel worker` processes run (a real dev server, real processes on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner
from temporal_workers import free_port, start_worker, worker_command

from toolreel.cli import cli
from toolreel.shell.scripted import ScriptedServer

TOOLREEL = str(Path(sys.executable).parent / "toolreel")
#: Variables that would give `serve` a model of its own.
MODEL_ENV = ("OPENAI_API_KEY", "TOOLREEL_BASE_URL", "TOOLREEL_PROVIDER", "TOOLREEL_MODEL")


@pytest.fixture
def served(temporal_address: str, calculator: ScriptedServer, tmp_path: Path) -> Iterator[str]:
    """The URL of `serve --temporal` on a task queue a `toolreel worker` serves."""
    task_queue = f"q-{uuid.uuid4().hex[:8]}"
    worker = start_worker(
        worker_command(temporal_address, calculator.url, task_queue),
        {"TOOLREEL_TEST_RUNS": str(tmp_path / "runs.txt")},
        tmp_path / "worker.log",
    )
    env = {k: v for k, v in os.environ.items() if k not in MODEL_ENV}
    command = [TOOLREEL, "serve", "--port", "0", "--temporal", temporal_address]
    server = subprocess.Popen(
        [*command, "--task-queue", task_queue], stderr=subprocess.PIPE, text=True, env=env
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in server.stderr or ()]).start()
    try:
        first = lines.get(timeout=60)
        assert f"task queue {task_queue!r} on {temporal_address}" in first, first
        yield first.split(" on http://")[1].split()[0]
    finally:
        for process in (server, worker):
            process.kill()
            process.wait()


def test_serve_with_temporal_streams_a_chat_a_worker_runs(served: str) -> None:
    user = {"id": "u", "role": "user", "parts": [{"type": "text", "text": "What is 25 plus 17?"}]}
    body = {"id": "serve-1", "messages": [user], "trigger": "submit-message", "messageId": None}
    response = httpx2.post(f"http://{served}/api/chat", json=body, timeout=60)
    assert response.status_code == 200, response.text
    events = [e for e in response.text.split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    parts: list[dict[str, Any]] = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    calls = [p["toolName"] for p in parts if p["type"] == "tool-input-available"]
    assert calls == ["add"]  # run by the worker, its result in the stream
    assert any(p["type"] == "tool-output-available" for p in parts)
    last = max(i for i, p in enumerate(parts) if p["type"] == "start-step")
    answer = "".join(p["delta"] for p in parts[last:] if p["type"] == "text-delta")
    assert answer == "The answer is 42."
    listed = httpx2.get(f"http://{served}/api/sessions", timeout=30).json()["sessions"]
    assert [(row["id"], row["outcome"]) for row in listed] == [("serve-1", "completed")]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--journal", "web.db"], "'--journal'"),
        (["--tools", "temporal_tools:TOOLS"], "'--tools'"),
        (["--max-model-calls", "3"], "budget flags are not supported with --temporal"),
    ],
)
def test_serve_with_temporal_refuses_what_the_workers_hold(flags: list[str], says: str) -> None:
    address = f"127.0.0.1:{free_port()}"
    result = CliRunner().invoke(cli, ["serve", "--port", "0", "--temporal", address, *flags])
    assert result.exit_code == 2 and says in result.output, result.output


def test_serve_with_an_unreachable_temporal_says_so_in_one_line() -> None:
    address = f"127.0.0.1:{free_port()}"
    result = CliRunner().invoke(cli, ["serve", "--port", "0", "--temporal", address])
    assert result.exit_code == 1, result.output
    assert f"cannot reach Temporal at {address}" in result.output
    assert "Traceback" not in result.output
