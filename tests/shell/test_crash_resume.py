"""Every session survives a crash: SIGKILL the worker at many points, resume, check the transcript.

The scripted server is stateless (it answers from the request alone), like a
model: round r (r < ROUNDS) calls `record(n=r)`; then it answers with the
results it was shown. The worker's tool appends n to a file before returning.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolreel.adapters import SQLiteJournal, persisted_messages
from toolreel.core._history import unanswered_calls
from toolreel.shell.scripted import Reply, ScriptedServer

ROUNDS = 5
WORKER = Path(__file__).with_name("crash_worker.py")


def model(request: dict) -> Reply:
    """The stateless scripted model."""
    results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    if len(results) < ROUNDS:
        n = len(results)
        return Reply(calls=((f"call_{n}", "record", json.dumps({"n": n})),), delay=0.01)
    return Reply(text="Done: " + "; ".join(results), delay=0.01)


def worker(url: str, tmp: Path, *extra: str) -> subprocess.Popen[bytes]:
    """Start the worker process."""
    args = [sys.executable, str(WORKER), url, str(tmp / "j.db"), str(tmp / "effects"), *extra]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill_after(process: subprocess.Popen[bytes], effects: Path, ran: int, delay: float) -> int:
    """SIGKILL the worker once `ran` tool calls happened, `delay` seconds later; its exit code."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and process.poll() is None:
        count = len(effects.read_text().split()) if effects.exists() else 0
        if count >= ran:
            break
        time.sleep(0.002)
    time.sleep(delay)
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    return process.wait(10)


# A round takes ~35 ms (10 ms model reply, 20 ms tool): these delays land in the tool run,
# between the tool and the next model call, and in the model call.
KILL_POINTS = [(ran, delay) for ran in range(ROUNDS) for delay in (0.0, 0.01, 0.025)]


@pytest.mark.parametrize(("ran", "delay"), KILL_POINTS)
def test_killed_session_resumes_complete_with_each_call_run_at_most_once(
    tmp_path: Path, ran: int, delay: float
) -> None:
    effects = tmp_path / "effects"
    with ScriptedServer(model) as server:
        code = kill_after(worker(server.url, tmp_path), effects, ran, delay)
        assert code == -signal.SIGKILL or ran == ROUNDS - 1, "the worker ended before the kill"
        resumed = worker(server.url, tmp_path, "resume")
        _, err = resumed.communicate(timeout=60)
        assert resumed.returncode == 0, err.decode()

    journal = SQLiteJournal(tmp_path / "j.db")
    messages = persisted_messages(journal.entries("crash"))
    journal.close()
    ran_calls = effects.read_text().split() if effects.exists() else []
    assert len(ran_calls) == len(set(ran_calls)), f"a call ran twice: {ran_calls}"
    user, answer = messages  # (killed before the prompt was journaled, it started over)
    assert user.content == "Record rounds."
    assert len(answer.tool_rounds) == ROUNDS  # no round lost
    assert unanswered_calls(messages) == ()
    assert answer.content.startswith("Done: ")
    for tool_round in answer.tool_rounds:
        [result] = tool_round.results
        n = json.loads(tool_round.tool_calls[0].arguments)["n"]
        if result.is_error:
            assert result.content == "interrupted; outcome unknown"
        else:
            assert result.content == f"recorded {n}" and str(n) in ran_calls
