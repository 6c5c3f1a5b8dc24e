"""Journals under contention and damage: one writer per session, locks, torn lines, edits."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from journal_damage import open_journal, record, recorded, rows, sql

from toolreel.adapters import (
    JournalCorrupt,
    JournalError,
    JournalUnavailable,
    JSONLJournal,
    MemoryJournal,
    SessionBusy,
    SQLiteJournal,
    Step,
    load_session,
    persisted_messages,
)
from toolreel.cli import cli
from toolreel.core import LoopConfig, PromptSubmitted, ToolFinished, initial_state, step
from toolreel.shell import Client, Divergence, export_session, replay, tool
from toolreel.testing import ScriptedModel, text, tool_calls

CONFIG = LoopConfig(model="m")
KINDS = ["j.db", "j.jsonl"]


def prompt_step(seq: int = 1) -> Step:
    """A step to append: a prompt and its effects."""
    _, effects = step(initial_state(CONFIG), PromptSubmitted(text="hi"))
    return Step(seq=seq, event=PromptSubmitted(text="hi"), effects=effects)


# --- one writer per session ----------------------------------------------------------------


@pytest.mark.parametrize("name", KINDS)
def test_a_second_writer_is_refused_naming_the_owner_until_the_first_releases(
    tmp_path: Path, name: str
) -> None:
    first, second = open_journal(tmp_path / name), open_journal(tmp_path / name)
    lease = first.begin("s", CONFIG)
    with pytest.raises(SessionBusy, match=rf"'s' is in use by pid {os.getpid()} on host") as busy:
        second.begin("s", CONFIG)
    assert busy.value.session_id == "s" and "expires in" in str(busy.value)
    with pytest.raises(SessionBusy):
        second.append("s", [prompt_step()])
    first.append("s", [prompt_step()])
    first.release(lease)
    second.begin("s", CONFIG, from_seq=1)
    second.append("s", [prompt_step(2)])
    assert [e.seq for e in first.entries("s")] == [1, 2]
    first.close()
    second.close()


def test_two_writers_sharing_one_memory_journal_are_refused() -> None:
    journal = MemoryJournal()
    lease = journal.begin("s", CONFIG)
    with pytest.raises(SessionBusy, match="did not release it"):
        journal.begin("s", CONFIG)
    journal.release(lease)
    journal.begin("s", CONFIG)


HOLDER = """
import sys
import time
from toolreel.adapters import SQLiteJournal, JSONLJournal
from toolreel.core import LoopConfig
path = sys.argv[1]
journal = JSONLJournal(path) if path.endswith(".jsonl") else SQLiteJournal(path)
journal.begin("s", LoopConfig(model="m"))
print("holding", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("name", KINDS)
def test_a_live_process_holds_its_session_and_a_killed_one_is_taken_over_at_once(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"holding\n"
    journal = open_journal(path)
    with pytest.raises(SessionBusy, match=f"pid {holder.pid} on host"):
        journal.begin("s", CONFIG)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    journal.begin("s", CONFIG)  # the lease of a dead process on this host: no wait
    journal.close()


def test_a_lease_from_another_host_is_respected_until_it_expires(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    SQLiteJournal(path).close()
    owner = json.dumps({"host": "elsewhere", "pid": 1, "token": "t"})
    sql(path, "INSERT INTO leases VALUES ('s', ?, strftime('%s','now') + 100)", owner)
    journal = SQLiteJournal(path)
    with pytest.raises(SessionBusy, match="pid 1 on host elsewhere") as busy:
        journal.begin("s", CONFIG)
    assert "expires in 100 s" in str(busy.value) or "expires in 99 s" in str(busy.value)
    sql(path, "UPDATE leases SET expires = strftime('%s','now') - 1")
    journal.begin("s", CONFIG)
    journal.close()


# --- locks -----------------------------------------------------------------------------------


def test_a_locked_file_keeps_the_steps_and_writes_them_once_it_is_free(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path, busy_seconds=0.2)
    journal.begin("s", CONFIG)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(JournalUnavailable, match=rf"{path}.*locked"):
        journal.append("s", [prompt_step(1)])
    other.execute("COMMIT")
    journal.flush()
    assert [e.seq for e in journal.entries("s")] == [1]
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(JournalUnavailable):
        journal.append("s", [prompt_step(2)])
    other.execute("COMMIT")
    journal.append("s", [prompt_step(3)])  # the kept step goes first
    assert [e.seq for e in journal.entries("s")] == [1, 2, 3]
    journal.close()
    other.close()


def test_a_failed_write_is_rolled_back_and_leaves_the_file_writable(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path, busy_seconds=0.2)
    journal.begin("s", CONFIG)
    journal.append("s", [prompt_step(1)])
    with pytest.raises(JournalError, match=str(path)):
        journal.append("s", [prompt_step(1)])  # the same step again: refused
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")  # no transaction of ours is left open
    other.execute("ROLLBACK")
    other.close()
    journal.append("s", [prompt_step(2)])
    assert [e.seq for e in journal.entries("s")] == [1, 2]
    journal.close()


# --- a torn JSONL tail -------------------------------------------------------------------------


@pytest.mark.parametrize("tail", [b'{"session":"s","kind":"st', b'{"session":"s",\x00\x00\n'])
def test_a_torn_last_line_is_set_aside_and_appends_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, tail: bytes
) -> None:
    path = tmp_path / "j.jsonl"
    recorded(path)
    offset = path.stat().st_size
    with path.open("ab") as file:
        file.write(tail)
    with caplog.at_level(logging.WARNING, logger="toolreel.journal"):
        journal = JSONLJournal(path)
    assert f"{path}" in caplog.text and f"byte offset {offset}" in caplog.text
    assert (tmp_path / f"j.jsonl.torn-{offset}").read_bytes() == tail
    record(journal, "t")
    journal.close()
    journal = JSONLJournal(path)
    assert journal.sessions() == ["s", "t"]
    assert [t.reason for t in load_session(journal, "s").turns] == [
        t.reason for t in load_session(journal, "t").turns
    ]
    assert load_session(journal, "t").turns[0].text == "done 0"
    journal.close()


# --- damage ------------------------------------------------------------------------------------


def test_undecodable_sqlite_data_raises_journal_corrupt_naming_file_session_and_step(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.db"
    recorded(path)
    first, _, _ = rows(path)[-1]
    sql(path, "UPDATE steps SET body = 'not json' WHERE first_seq = ?", first)
    journal = SQLiteJournal(path)
    expected = rf"{path}, session 's', step {first} is damaged"
    for read in (
        lambda: list(journal.entries("s")),
        lambda: load_session(journal, "s"),
        lambda: export_session(journal, "s", tmp_path / "out.jsonl"),
    ):
        with pytest.raises(JournalCorrupt, match=expected):
            read()
    assert not (tmp_path / "out.jsonl").exists()
    sql(path, "UPDATE configs SET config = '{'")
    with pytest.raises(JournalCorrupt, match="session 's'"):
        journal.config("s")
    journal.close()


def test_a_jsonl_line_that_is_not_json_raises_journal_corrupt_naming_the_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.jsonl"
    recorded(path)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = b"{garbage\n"
    path.write_bytes(b"".join(lines))
    journal = JSONLJournal(path)
    for read in (journal.sessions, lambda: list(journal.entries("s"))):
        with pytest.raises(JournalCorrupt, match=rf"{path} is damaged: line 3"):
            read()
    journal.close()


@pytest.mark.parametrize("name", KINDS)
def test_edited_data_is_shown_with_a_warning_naming_file_session_and_steps(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    recorded(path, output="forty-two")
    if path.suffix == ".db":
        sql(path, "UPDATE steps SET body = replace(body, 'forty-two', 'forty-one')")
    else:
        path.write_bytes(path.read_bytes().replace(b"forty-two", b"forty-one"))
    journal = open_journal(path)
    session = load_session(journal, "s")
    journal.close()
    assert session.turns[0].answer is not None  # still shown
    [warning] = session.warnings
    assert str(path) in warning and "'s'" in warning and "checksum" in warning
    assert "step" in warning
    shown = CliRunner().invoke(cli, ["show", str(path), "s"])
    assert shown.exit_code == 0
    assert f"warning: {warning}" in shown.stderr


def test_steps_missing_from_a_session_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    recorded(path, turns=2)
    lines = path.read_bytes().splitlines(keepends=True)
    seqs = [json.loads(line).get("seq") for line in lines]
    gone = seqs.index(3)
    path.write_bytes(b"".join(lines[:gone] + lines[gone + 1 :]))
    journal = JSONLJournal(path)
    try:
        warnings = load_session(journal, "s").warnings
    except JournalCorrupt as exc:
        warnings = (str(exc),)
    journal.close()
    assert any("step 3 is missing" in w and str(path) in w for w in warnings)


def test_a_deleted_wal_loses_at_most_the_turn_in_flight(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    record(journal, "s")  # one finished turn, the journal still open (its WAL live)
    journal.begin("s", CONFIG, from_seq=99)
    journal.append("s", [prompt_step(100)])  # a turn in flight
    survivor = tmp_path / "copy.db"
    shutil.copy(path, survivor)  # the main file alone, as if the WAL were deleted
    copy = SQLiteJournal(survivor)
    assert [t.text for t in load_session(copy, "s").turns] == ["done 0"]
    copy.close()
    journal.close()


@pytest.mark.parametrize(
    ("name", "content"),
    [("notes.db", "not a database\n" * 100), ("notes.jsonl", "hello\nworld\n"), ("dir.db", None)],
)
def test_a_path_that_is_not_a_journal_is_refused_naming_it(
    tmp_path: Path, name: str, content: str | None
) -> None:
    path = tmp_path / name
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)
    with pytest.raises((JournalUnavailable, JournalCorrupt), match=str(path)):
        open_journal(path)
    if content is not None:
        assert path.read_text() == content  # left as it was


# --- size --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", KINDS)
def test_a_large_tool_output_is_stored_once_and_replays(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    output = "x" * 10_000_000
    recorded(path, output=output)
    journal = open_journal(path)
    assert sum(p.stat().st_size for p in tmp_path.iterdir() if p.is_file()) < 13_000_000
    assert load_session(journal, "s").turns[0].answer.tool_rounds[0].results[0].content == output
    assert persisted_messages(journal.entries("s"))[1].tool_rounds[0].results[0].content == output
    assert not isinstance(replay(journal, "s"), Divergence)
    journal.close()


@pytest.mark.parametrize("name", KINDS)
def test_an_idle_writer_keeps_its_session_by_heartbeat(tmp_path: Path, name: str) -> None:
    first = open_journal(tmp_path / name, lease_seconds=0.3)
    first.begin("s", CONFIG)
    time.sleep(0.9)  # three leases long, nothing written: the heartbeat renews it
    second = open_journal(tmp_path / name, lease_seconds=0.3)
    with pytest.raises(SessionBusy):
        second.begin("s", CONFIG)
    first.close()
    second.begin("s", CONFIG)
    second.close()


def test_a_lock_held_through_a_tool_outcome_loses_no_step(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path, busy_seconds=0.2)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    @tool
    def fetch(n: int) -> str:
        """A tool during which another connection locks the file."""
        other.execute("BEGIN IMMEDIATE")
        return "the outcome"

    model = ScriptedModel([tool_calls(("c1", "fetch", {"n": 1})), text("done")], http=False)
    options = model.options(tools=[fetch], auto_execute_tools=True, journal=journal, session_id="s")

    async def main() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("fetch")
            with pytest.raises(Exception) as failed:  # (the Runner may still wrap it in a group)
                await client.wait()
            if isinstance(failed.value, ExceptionGroup):
                assert failed.group_contains(JournalUnavailable, match=rf"{path}.*locked")
            else:
                assert failed.match(rf"{path}.*locked") and failed.type is JournalUnavailable

    anyio.run(main)
    other.execute("COMMIT")
    journal.close()  # writes the steps the lock kept back
    journal = SQLiteJournal(path)
    outputs = [e.event.output for e in journal.entries("s") if isinstance(e.event, ToolFinished)]
    assert outputs == ["the outcome"]
    journal.close()
    other.close()
