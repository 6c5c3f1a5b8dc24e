"""Journals written by bfd8293 — chat sessions and agent runs, with approvals, budgets,
images, hooks, retries and crashes — load, replay and resume with today's code.

bfd8293's own code writes them: `git archive bfd8293` into a temporary folder, a
`toolreel` package there whose subpackages are that commit's folders (as pyproject.toml
maps them), and a subprocess that imports it runs old_journals_writer.py. Its manifest
says what bfd8293 made of each session (transcript, history, phase, outcome); today's
code must read the same from the same bytes, replay them without a divergence, and go
on with the ones that were paused or interrupted.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from toolreel.adapters import (
    JSONLJournal,
    SQLiteJournal,
    load_session,
    render_transcript,
    unstructure,
)
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    Client,
    Divergence,
    OutputTool,
    execute_agent,
    export_session,
    image,
    import_session,
    load_agent_session,
    replay,
    resume_agent,
    tool,
)
from toolreel.shell.scripted import ScriptedServer, text, tool_calls

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("old_journals_writer.py")
COMMIT = "bfd8293"
#: Where pyproject.toml installs each folder (`[tool.setuptools.package-dir]`).
PACKAGES = {
    "core": "core",
    "adapters": "adapters",
    "shell": "shell",
    "testing": "shell/testing",
    "otel": "shell/otel",
    "web": "shell/web",
    "open_agent": "shell/open_agent",
    "mcp": "shell/mcp",
    "temporal": "shell/temporal",
}
PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)


def _old_code(where: Path) -> Path:
    """bfd8293's tree, importable as `toolreel.*` from the returned folder (skip if no git)."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", COMMIT],
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot read commit {COMMIT} from git: {exc}")
    source = where / "source"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(source, filter="data")
    package = where / "shim" / "toolreel"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""bfd8293\'s toolreel, for writing old journals."""\n')
    for name, folder in PACKAGES.items():
        (package / name).symlink_to(source / folder, target_is_directory=True)
    return where / "shim"


def _write(shim: Path, directory: Path, scenario: str = "all") -> None:
    """Run the writer under bfd8293's code."""
    env = {**os.environ, "PYTHONPATH": str(shim)}
    done = subprocess.run(
        [sys.executable, str(WRITER), str(directory), scenario],
        capture_output=True,
        check=False,
        text=True,
        timeout=180,
        env=env,
        cwd=directory.parent,
    )
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder of journals bfd8293 wrote, with its manifest."""
    where = tmp_path_factory.mktemp("bfd8293")
    shim = _old_code(where)
    journals = where / "journals"
    _write(shim, journals)
    _write(shim, journals, "crash-chat")
    _write(shim, journals, "crash-agent")
    yield journals
    shutil.rmtree(where, ignore_errors=True)


def _manifest(old: Path) -> dict[str, Any]:
    """What bfd8293 made of each session it wrote."""
    found: dict[str, Any] = json.loads((old / "manifest.json").read_text())
    return found


def _open(path: Path) -> SQLiteJournal | JSONLJournal:
    """The journal file as today's code opens it."""
    return SQLiteJournal(path) if path.suffix == ".db" else JSONLJournal(path)


def _copy(old: Path, name: str, tmp_path: Path) -> Path:
    """A copy of one of the old journals (a test that goes on writes to its own).

    A crash leaves SQLite's write-ahead log beside the file: it is copied too.
    """
    for path in old.glob(f"{name}*"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path / name


def unreasoned(data: Any) -> Any:
    """History data without the results' `reason` (today's records say why the core
    answered a call; bfd8293's had no such field)."""
    if isinstance(data, dict):
        return {key: unreasoned(value) for key, value in data.items() if key != "reason"}
    if isinstance(data, list):
        return [unreasoned(item) for item in data]
    return data


def in_todays_words(transcript: str) -> str:
    """A transcript bfd8293 rendered, as today's code words it: one iteration is "1
    iteration" (bfd8293 wrote "1 iterations"; the CLI's plurals, issue 21)."""
    return re.sub(r"\b1 iterations\b", "1 iteration", transcript)


def _outcome(session: Any) -> Any:
    """An agent run's outcome as the agent API tells it (None: it never ended)."""
    return None if session.outcome is None else unstructure(session.outcome)


def _phase(session: Any) -> str:
    """An agent run's phase as bfd8293 named it: an ended run was FINISHED (today it is
    idle, its `Finish` kept)."""
    return "finished" if session.finish is not None else str(session.state.phase.value)


def test_the_writer_made_every_kind_of_session(old: Path) -> None:
    manifest = _manifest(old)
    assert {key.split("/")[1] for key in manifest} >= {
        "tools",
        "images",
        "budget",
        "approval-paused",
        "ask-paused",
        "approval-decided",
        "invoice",
        "reflect",
        "agent-paused",
        "agent-ask-paused",
        "agent-blocked",
        "agent-over",
        "agent-tool-limit",
        "agent-images",
        "agent-invalid",
        "agent-capped",
        "agent-decided",
    }
    assert {entry["replayed"] for entry in manifest.values()} == {"Session", "AgentSession"}


def test_every_old_session_loads_as_bfd8293_read_it(old: Path) -> None:
    for key, expected in _manifest(old).items():
        name, sid = key.split("/")
        journal = _open(old / name)
        try:
            if expected["kind"] == "agent":
                session: Any = load_agent_session(journal, sid)
                phase, outcome = _phase(session), _outcome(session)
            else:
                session = load_session(journal, sid)
                phase = session.phase.value
                outcome = [None if t.reason is None else t.reason.value for t in session.turns]
        finally:
            journal.close()
        assert render_transcript(session) == in_todays_words(expected["transcript"]), key
        assert unreasoned(unstructure(session.history)) == expected["history"], key
        assert (phase, outcome) == (expected["phase"], expected["outcome"]), key
        assert unstructure(session.usage) == expected["usage"], key
        assert [r.call.id for r in session.approvals] == expected["approvals"], key


def test_every_old_session_replays_without_a_divergence(old: Path) -> None:
    for key in _manifest(old):
        name, sid = key.split("/")
        journal = _open(old / name)
        try:
            replayed = replay(journal, sid)
        finally:
            journal.close()
        assert not isinstance(replayed, Divergence), f"{key}: {replayed}"


def test_an_old_agent_run_exported_and_imported_still_replays(old: Path, tmp_path: Path) -> None:
    journal = _open(old / "agents.db")
    try:
        export_session(journal, "reflect", tmp_path / "reflect.jsonl")
        shown = render_transcript(load_agent_session(journal, "reflect"))
    finally:
        journal.close()
    moved = SQLiteJournal(tmp_path / "moved.db")
    try:
        import_session(tmp_path / "reflect.jsonl", moved)
        assert not isinstance(replay(moved, "reflect"), Divergence)
        assert render_transcript(load_agent_session(moved, "reflect")) == shown
    finally:
        moved.close()


# --- going on with what bfd8293 left paused or interrupted --------------------------


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (nothing is deleted: a test)."""
    return f"deleted {path}"


@tool
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tool
def screenshot() -> list[Any]:
    """Take a screenshot."""
    return ["the login page", image(PNG)]


@tool
def boom(n: int) -> str:
    """Ended the process mid-call in bfd8293's run; here it must not run again."""
    raise AssertionError("a call whose outcome was lost ran again")


@tool
def currency_rate(currency: str) -> float:
    """Euros per unit of `currency`."""
    return {"USD": 0.92, "EUR": 1.0, "GBP": 1.17}[currency]


@tool(requires_approval=True)
def delete_row(row: int) -> str:
    """Delete a row (nothing is deleted: a test)."""
    return f"deleted row {row}"


@attrs.frozen
class Invoice:
    number: str
    total: float


def _agent() -> AgentDefinition[str, Invoice]:
    """The writer's invoice agent (plain output)."""
    return AgentDefinition(
        build_prompt=lambda text: f"Extract the invoice from: {text}",
        output=OutputTool.of(Invoice, name="record_invoice"),
        helpers=[currency_rate, look, delete_row, boom],
        system_prompt="You extract invoices.",
    )


def _chat_options(url: str, journal: Path, sid: str) -> AgentOptions:
    """The writer's chat options, today."""
    return AgentOptions(
        model="old-chat",
        base_url=url,
        api_key="sk-old",
        tools=[add, delete, look, screenshot, boom],
        auto_execute_tools=True,
        journal=journal,
        session_id=sid,
    )


def _agent_options(url: str, journal: Path, sid: str) -> AgentOptions:
    """The writer's agent options, today."""
    return AgentOptions(
        model="old-agent", base_url=url, api_key="sk-old", journal=journal, session_id=sid
    )


def _tool_messages(request: dict[str, Any]) -> list[str]:
    """The tool results a request sends, in order."""
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def _replays(path: Path, sid: str) -> None:
    """The journal, old steps and new, replays without a divergence."""
    journal = _open(path)
    try:
        replayed = replay(journal, sid)
    finally:
        journal.close()
    assert not isinstance(replayed, Divergence), str(replayed)


@pytest.mark.parametrize(("sid", "decided"), [("approval-paused", "p1"), ("ask-paused", "q1")])
def test_an_old_paused_chat_turn_is_approved_and_finishes(
    old: Path, tmp_path: Path, sid: str, decided: str
) -> None:
    path = _copy(old, "chat.db", tmp_path)
    with ScriptedServer([text("Done.")]) as server:

        async def go() -> Any:
            async with Client.resume(sid, _chat_options(server.url, path, sid)) as client:
                await client.approve(decided)
                return await client.wait()

        finish = anyio.run(go)
        sent = _tool_messages(server.requests[0])
    assert finish is not None and finish.text == "Done."
    assert "deleted a.txt" in sent or "contents of /etc/passwd" in sent
    _replays(path, sid)


@pytest.mark.parametrize(("sid", "decided"), [("agent-paused", "d1"), ("agent-ask-paused", "r1")])
def test_an_old_paused_agent_run_is_approved_and_produces_its_output(
    old: Path, tmp_path: Path, sid: str, decided: str
) -> None:
    path = _copy(old, "agents.db", tmp_path)
    script = [tool_calls(("o1", "record_invoice", {"number": "INV-1", "total": 92}))]
    with ScriptedServer(script) as server:
        options = _agent_options(server.url, path, sid)
        result = anyio.run(lambda: resume_agent(sid, _agent(), options, approve=[decided]))
        sent = _tool_messages(server.requests[0])
    assert isinstance(result, AgentSuccess), result
    assert result.output == Invoice(number="INV-1", total=92)
    assert "deleted row 3" in sent or "1.17" in sent
    _replays(path, sid)


def test_an_old_chat_session_interrupted_mid_call_resumes_without_rerunning_it(
    old: Path, tmp_path: Path
) -> None:
    path = _copy(old, "crash.db", tmp_path)
    with ScriptedServer([text("It broke.")]) as server:

        async def go() -> Any:
            options = _chat_options(server.url, path, "crash-chat")
            async with Client.resume("crash-chat", options) as client:
                return await client.wait()

        finish = anyio.run(go)
        sent = _tool_messages(server.requests[0])
    assert finish is not None and finish.text == "It broke."
    assert sent == ["2", "interrupted; outcome unknown"]
    _replays(path, "crash-chat")


def test_an_old_agent_run_interrupted_mid_call_resumes_without_rerunning_it(
    old: Path, tmp_path: Path
) -> None:
    path = _copy(old, "crash.db", tmp_path)
    script = [tool_calls(("o1", "record_invoice", {"number": "INV-1", "total": 92}))]
    with ScriptedServer(script) as server:
        options = _agent_options(server.url, path, "crash-agent")
        result = anyio.run(lambda: execute_agent(_agent(), "unused", options))
        sent = _tool_messages(server.requests[0])
    assert isinstance(result, AgentSuccess), result
    assert sent == ["0.92", "interrupted; outcome unknown"]
    _replays(path, "crash-agent")
