"""`toolreel a2a-serve`: the command serves the flags' agent, driven by a2a-sdk's client.

The server runs as `python -m toolreel a2a-serve --model test --port 0` (TestModel: calls
each tool once, then answers) with the tools of tests/a2a/served_tools.py on 127.0.0.1.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

pytest.importorskip("a2a", reason="toolreel.a2a needs the A2A SDK: pip install 'toolreel[a2a]'")

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import get_artifact_text, new_text_part
from a2a.types import Message, Role, SendMessageRequest, Task, TaskState

from toolreel.adapters import load_session
from toolreel.cli._a2a import _ready
from toolreel.shell import open_journal

HERE = Path(__file__).parent


def serving(journal: Path) -> Iterator[str]:
    """`toolreel a2a-serve` on a free port for the generator's life: its URL."""
    args = [sys.executable, "-m", "toolreel", "a2a-serve", "--model", "test", "--port", "0"]
    args += ["--tools", "served_tools:TOOLS", "--journal", str(journal)]
    with subprocess.Popen(args, cwd=HERE, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stderr is not None
            line = process.stderr.readline()
            found = re.search(r"on (http://127\.0\.0\.1:\d+/)", line)
            assert found, f"the server said {line!r}"
            yield found.group(1)
        finally:
            process.terminate()
            process.wait(timeout=30)


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return tmp_path / "j.jsonl"


def test_a2a_serve_answers_a_message_and_journals_the_session(journal: Path) -> None:
    async def main(url: str) -> tuple[Task, list[str]]:
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, url).get_agent_card()
            skills = [skill.id for skill in card.skills]
            client = await create_client(card, ClientConfig(streaming=False, httpx_client=http))
            message = Message(message_id="m1", role=Role.ROLE_USER, parts=[new_text_part("go")])
            answers = [r async for r in client.send_message(SendMessageRequest(message=message))]
            return answers[-1].task, skills

    for url in serving(journal):
        task, skills = anyio.run(main, url)
    assert skills == ["chat", "add"]
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    kept = open_journal(journal)
    session = load_session(kept, task.context_id)
    kept.close()
    assert session.turns[0].prompt == "go"
    assert session.turns[0].text == get_artifact_text(task.artifacts[0])


def test_a2a_serve_shows_a_token_it_made_never_one_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    made = "m" * 43
    _ready("0.0.0.0", None)("http://0.0.0.0:8000/", made)
    _ready("0.0.0.0", "g" * 20)("http://0.0.0.0:8000/", "g" * 20)
    _ready("127.0.0.1", None)("http://127.0.0.1:8000/", None)
    told = capsys.readouterr().err
    assert told.count("warning: serving beyond this machine") == 2  # not on loopback
    assert f"Authorization: Bearer {made}" in told
    assert "g" * 20 not in told
