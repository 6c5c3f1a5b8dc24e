"""The PostgreSQL journal on a real server: shared by processes, one owner per session, leases.

The server is the session's throwaway one (tests/conftest.py `postgres`); each test has
a schema of its own. The journal contract itself (configs, steps, sessions) runs in
tests/adapters/test_journals.py and test_journal_configs.py against this journal too.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode

import anyio
import psycopg
import pytest
from click.testing import CliRunner
from postgres_server import PASSWORD, schema_dsn

from toolreel.adapters import (
    JournalError,
    JournalUnavailable,
    PostgresJournal,
    SessionBusy,
    SQLiteJournal,
    Step,
    load_session,
)
from toolreel.adapters._postgres import LIST_SESSIONS
from toolreel.cli import cli
from toolreel.core import LoopConfig, PromptSubmitted, initial_state, step
from toolreel.shell import AgentOptions, Client, Divergence, replay, tool
from toolreel.shell.scripted import ScriptedServer, text, tool_calls

CONFIG = LoopConfig(model="m")
WORKER = str(Path(__file__).with_name("pg_worker.py"))


def prompt_step(seq: int = 1) -> Step:
    """A step to append: a prompt and its effects."""
    _, effects = step(initial_state(CONFIG), PromptSubmitted(text="hi"))
    return Step(seq=seq, event=PromptSubmitted(text="hi"), effects=effects)


def sql(dsn: str, statement: str, *args: object) -> list[tuple[object, ...]]:
    """Run one statement behind the journal's back (an editor, another tool); its rows."""
    with psycopg.connect(dsn, autocommit=True) as db:
        cursor = db.execute(statement, args)
        return cursor.fetchall() if cursor.description else []


def answer(request: dict) -> object:
    """The scripted model: call `record` once, then answer with what it returned."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return text(f"done: {last['content']}")
    n = int(last["content"].split()[-1])
    return tool_calls((f"call_{n}", "record", {"n": n}))


# --- one writer per session --------------------------------------------------------------


def test_a_second_writer_is_refused_naming_the_owner_until_the_first_releases(
    postgres_dsn: str,
) -> None:
    first, second = PostgresJournal(postgres_dsn), PostgresJournal(postgres_dsn)
    lease = first.begin("s", CONFIG)
    with pytest.raises(SessionBusy, match=rf"'s' is in use by pid {os.getpid()} on host") as busy:
        second.begin("s", CONFIG)
    assert "expires in 30 s" in str(busy.value) or "expires in 29 s" in str(busy.value)
    with pytest.raises(SessionBusy):
        second.append("s", [prompt_step()])
    first.append("s", [prompt_step()])
    first.release(lease)
    second.begin("s", CONFIG, from_seq=1)
    second.append("s", [prompt_step(2)])
    assert [e.seq for e in first.entries("s")] == [1, 2]
    first.close()
    second.close()


#: Holds back the lease-taking of a journal whose connection is named "opener" while the test
#: holds the advisory lock `GATE`: the moment another writer's commits can land in its `begin`.
GATE = 0x6F70656E  # "open"
HOLD_THE_OPENER = f"""
CREATE FUNCTION hold_the_opener() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('application_name') = 'opener' THEN
        PERFORM pg_advisory_xact_lock_shared({GATE});
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER hold_the_opener BEFORE INSERT ON toolreel_leases
FOR EACH ROW EXECUTE FUNCTION hold_the_opener();
"""


@pytest.mark.parametrize("isolation", ["read committed", "repeatable read", "serializable"])
@pytest.mark.parametrize("written", [0, 1], ids=["first-open", "mid-turn"])
def test_a_turn_that_ends_while_another_writer_takes_the_lease_is_seen_by_its_begin(
    postgres_dsn: str, written: int, isolation: str
) -> None:
    """The writer's last step and its release land while the opener's `begin` takes the lease:
    the opener read the session before that step, so it is refused, on a server of any default
    isolation level."""
    writer = PostgresJournal(postgres_dsn)
    lease = writer.begin("s", CONFIG)
    writer.append("s", [prompt_step(seq) for seq in range(1, written + 1)])
    opener = PostgresJournal(_opener_dsn(postgres_dsn, isolation))
    sql(postgres_dsn, HOLD_THE_OPENER)
    outcome: list[object] = []

    def begin() -> None:
        try:
            outcome.append(opener.begin("s", CONFIG, from_seq=written))  # what it read
        except SessionBusy as exc:
            outcome.append(exc)

    with psycopg.connect(postgres_dsn, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", (GATE,))
        opening = threading.Thread(target=begin)
        opening.start()
        _wait_for_the_gate(gate, opening)
        writer.append("s", [prompt_step(written + 1)])  # the turn ends...
        writer.release(lease)  # ...and gives the session back
        gate.execute("SELECT pg_advisory_unlock(%s)", (GATE,))
        opening.join()
    [refused] = outcome
    assert isinstance(refused, SessionBusy), "the opener took a session written after its reading"
    assert f"wrote step {written + 1} after this one read the session" in str(refused)
    opener.release(opener.begin("s", CONFIG, from_seq=written + 1))  # refused, it held nothing
    writer.close()
    opener.close()


def _opener_dsn(dsn: str, isolation: str) -> str:
    """`dsn` for the connection named "opener", whose transactions default to `isolation`."""
    base, _, query = dsn.partition("?")
    params = dict(parse_qsl(query))
    level = isolation.replace(" ", "\\ ")  # a space in `options` is escaped
    params["options"] = f"{params.get('options', '')} -cdefault_transaction_isolation={level}"
    params["application_name"] = "opener"
    return f"{base}?{urlencode(params, quote_via=quote)}"


def _wait_for_the_gate(
    gate: psycopg.Connection[tuple[object, ...]], opening: threading.Thread
) -> None:
    """Wait until the opener waits at the gate (or has ended)."""
    deadline = time.monotonic() + 60
    while opening.is_alive():
        waiting = gate.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'opener' "
            "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
        ).fetchone()
        if waiting and waiting[0]:
            return
        assert time.monotonic() < deadline, "the opener never reached the gate"
        time.sleep(0.01)


def test_a_writer_whose_lease_was_taken_over_writes_nothing_more(postgres_dsn: str) -> None:
    slow, other = PostgresJournal(postgres_dsn), PostgresJournal(postgres_dsn)
    slow.begin("s", CONFIG)
    slow.append("s", [prompt_step(1)])
    sql(postgres_dsn, "UPDATE toolreel_leases SET expires = now() - interval '1 second'")
    other.begin("s", CONFIG, from_seq=1)  # expired (a writer stalled past its lease)
    with pytest.raises(SessionBusy, match=f"journal {other.owner.token}"):
        slow.append("s", [prompt_step(2)])
    other.append("s", [prompt_step(2)])
    assert [e.seq for e in other.entries("s")] == [1, 2]
    slow.close()
    other.close()


def test_a_writer_whose_lease_was_taken_over_leaves_the_new_owners_lease_when_it_closes(
    postgres_dsn: str,
) -> None:
    slow, other = PostgresJournal(postgres_dsn), PostgresJournal(postgres_dsn)
    slow.begin("s", CONFIG)
    slow.append("s", [prompt_step(1)])
    sql(postgres_dsn, "UPDATE toolreel_leases SET expires = now() - interval '1 second'")
    other.begin("s", CONFIG, from_seq=1)  # expired: taken over
    slow.close()  # gives up what it holds: not the new owner's lease
    [(owner,)] = sql(postgres_dsn, "SELECT owner FROM toolreel_leases WHERE session_id = 's'")
    assert json.loads(str(owner))["token"] == other.owner.token
    third = PostgresJournal(postgres_dsn)
    with pytest.raises(SessionBusy, match=f"journal {other.owner.token}"):
        third.begin("s", CONFIG, from_seq=1)
    other.close()
    third.close()


def test_an_idle_writer_keeps_its_session_by_heartbeat(postgres_dsn: str) -> None:
    first = PostgresJournal(postgres_dsn, lease_seconds=0.6)
    first.begin("s", CONFIG)
    time.sleep(1.5)  # over two leases long, nothing written: the heartbeat renews it
    second = PostgresJournal(postgres_dsn, lease_seconds=0.6)
    with pytest.raises(SessionBusy):
        second.begin("s", CONFIG)
    first.close()
    second.begin("s", CONFIG)
    second.close()


def _holder(dsn: str, lease_seconds: float) -> subprocess.Popen[bytes]:
    """A `pg_worker.py hold` process, ready to race once given a line."""
    holder = subprocess.Popen(
        [sys.executable, WORKER, "hold", dsn, str(lease_seconds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
    return holder


def test_two_processes_racing_for_one_session_get_one_owner_and_one_busy(
    postgres_dsn: str,
) -> None:
    racers = [_holder(postgres_dsn, 30), _holder(postgres_dsn, 30)]
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write(b"go\n")
        racer.stdin.flush()
    said = sorted(racer.stdout.readline().decode().strip() for racer in racers)  # type: ignore[union-attr]
    for racer in racers:
        racer.kill()
        racer.wait()
    assert said == ["busy", "owner"]


def test_a_killed_owners_session_is_taken_over_once_its_lease_expires(postgres_dsn: str) -> None:
    holder = _holder(postgres_dsn, 1.5)  # its heartbeat renews it every 0.5 s
    assert holder.stdin is not None and holder.stdout is not None
    holder.stdin.write(b"go\n")
    holder.stdin.flush()
    assert holder.stdout.readline() == b"owner\n"
    journal = PostgresJournal(postgres_dsn)  # connected before the kill: no time lost after
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with pytest.raises(SessionBusy, match=f"pid {holder.pid} on host"):
        journal.begin("s", CONFIG)  # a dead pid proves nothing on a shared server: wait
    deadline = time.monotonic() + 5
    while True:
        try:
            journal.begin("s", CONFIG)
            break
        except SessionBusy:
            assert time.monotonic() < deadline, "the lease never expired"
            time.sleep(0.1)
    journal.append("s", [prompt_step(1)])
    assert [e.seq for e in journal.entries("s")] == [1]
    journal.close()


# --- many processes, one journal -------------------------------------------------------------


def test_four_processes_run_200_sessions_into_one_journal_losing_and_repeating_no_step(
    postgres_dsn: str,
) -> None:
    with ScriptedServer(answer) as server:
        workers = [
            subprocess.Popen(
                [sys.executable, WORKER, "run", postgres_dsn, server.url, str(k), "4", "200"],
                stderr=subprocess.PIPE,
            )
            for k in range(4)  # they also create the tables at once, on first use
        ]
        errors = [worker.communicate(timeout=120)[1].decode() for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0, 0, 0], errors
    journal = PostgresJournal(postgres_dsn)
    assert sorted(journal.sessions()) == [f"s{i:03d}" for i in range(200)]
    for index in range(200):
        sid = f"s{index:03d}"
        seqs = [entry.seq for entry in journal.entries(sid)]
        assert seqs == list(range(1, len(seqs) + 1)), sid  # none lost, none twice
        session = load_session(journal, sid)
        assert session.warnings == ()
        assert [turn.text for turn in session.turns] == [f"done: recorded {index}"], sid
        assert not isinstance(replay(journal, sid), Divergence)
    journal.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_sessions_sharing_one_journal_object_across_threads_lose_and_repeat_no_step(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    journal = (
        SQLiteJournal(tmp_path / "j.db")
        if kind == "sqlite"
        else request.getfixturevalue("postgres_journal")
    )
    sessions = [f"s{n}" for n in range(8)]
    for sid in sessions:
        journal.begin(sid, CONFIG)
    failures: list[BaseException] = []

    def write(sid: str) -> None:  # as Clients sharing the journal do, each from its thread
        try:
            for seq in range(1, 31):
                journal.append(sid, [prompt_step(seq)])
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(sid,)) for sid in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    for sid in sessions:
        assert [e.seq for e in journal.entries(sid)] == list(range(1, 31)), sid
    journal.close()


# --- what is stored ----------------------------------------------------------------------


def test_an_edited_row_is_shown_with_a_warning_naming_session_and_steps(
    postgres_dsn: str,
) -> None:
    journal = PostgresJournal(postgres_dsn)
    journal.begin("s", CONFIG)
    journal.append("s", [prompt_step(1)])
    sql(postgres_dsn, "UPDATE toolreel_steps SET body = replace(body, '\"hi\"', '\"ho\"')")
    session = load_session(journal, "s")
    journal.close()
    assert session.turns[0].prompt == "ho"  # still shown
    [warning] = session.warnings
    assert "'s'" in warning and "step(s) 1 " in warning and "checksum" in warning


def test_listing_sessions_reads_the_index_in_order_without_sorting(postgres_dsn: str) -> None:
    PostgresJournal(postgres_dsn).close()  # the tables
    sql(
        postgres_dsn,
        "INSERT INTO toolreel_sessions (id) "
        "SELECT 'session-' || n FROM generate_series(1, 100000) AS n",
    )
    sql(postgres_dsn, "ANALYZE toolreel_sessions")
    [[plan]] = sql(postgres_dsn, f"EXPLAIN (FORMAT JSON) {LIST_SESSIONS}")
    top = plan[0]["Plan"]  # type: ignore[index]
    assert (top["Node Type"], top["Index Name"]) == ("Index Only Scan", "toolreel_sessions_started")
    journal = PostgresJournal(postgres_dsn)
    listed = journal.sessions()
    journal.close()
    assert len(listed) == 100000 and listed[:2] == ["session-1", "session-2"]


def test_a_lost_connection_keeps_the_steps_and_writes_them_once_reconnected(
    postgres_dsn: str,
) -> None:
    journal = PostgresJournal(postgres_dsn)
    journal.begin("s", CONFIG)
    journal.append("s", [prompt_step(1)])
    sql(
        postgres_dsn,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE application_name = 'toolreel' AND pid <> pg_backend_pid()",
    )
    with pytest.raises(JournalUnavailable):
        journal.append("s", [prompt_step(2)])
    journal.append("s", [prompt_step(3)])  # reconnects; step 2 goes first
    assert [e.seq for e in journal.entries("s")] == [1, 2, 3]
    journal.close()


# --- failures, and the password --------------------------------------------------------------


def _said(exc: BaseException) -> str:
    """Everything a traceback of `exc` shows, causes included."""
    return "".join(traceback.format_exception(exc))


def test_the_password_is_never_shown_in_a_repr_an_error_or_a_log(
    postgres: object, postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    journal = PostgresJournal(postgres_dsn)
    assert PASSWORD not in repr(journal) and "***" in repr(journal)
    options = AgentOptions(model="m", journal=postgres_dsn)
    assert PASSWORD not in repr(options)
    journal.close()
    wrong = postgres_dsn.replace(PASSWORD, "wrong-password-123")
    with pytest.raises(JournalUnavailable, match="password authentication failed") as refused:
        PostgresJournal(wrong)
    assert "wrong-password-123" not in _said(refused.value)
    closed = postgres_dsn.replace("@127.0.0.1:", "@127.0.0.1:1").split("/postgres")[0]
    with pytest.raises(JournalUnavailable) as unreachable:
        PostgresJournal(closed + "/postgres")
    assert PASSWORD not in _said(unreachable.value) and "***" in str(unreachable.value)
    broken = postgres_dsn.replace(PASSWORD, f"{PASSWORD}%zz")  # libpq quotes this one back
    with pytest.raises(JournalError, match="invalid percent-encoded token") as malformed:
        PostgresJournal(broken)
    assert PASSWORD not in _said(malformed.value) and '"***"' in str(malformed.value)
    assert all(PASSWORD not in record.getMessage() for record in caplog.records)


def test_the_cli_keeps_a_session_in_postgres_and_never_prints_the_password(
    postgres_dsn: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    ran = runner.invoke(
        cli, ["run", "--model", "test", "--journal", postgres_dsn, "--session", "cli", "hello"]
    )
    assert ran.exit_code == 0, ran.output
    listed = runner.invoke(cli, ["sessions", "-q", postgres_dsn])
    assert listed.stdout == "cli\n"
    shown = runner.invoke(cli, ["show", postgres_dsn, "nope"])
    assert shown.exit_code != 0 and "no session 'nope'" in shown.stderr
    replayed = runner.invoke(cli, ["replay", postgres_dsn])
    assert replayed.exit_code == 0 and "OK" in replayed.stdout
    exported = runner.invoke(cli, ["export", postgres_dsn, "cli", str(tmp_path / "cli.jsonl")])
    assert exported.exit_code == 0
    moved = schema_dsn(postgres_dsn.split("?", maxsplit=1)[0], "cli_copy")
    imported = runner.invoke(cli, ["import", str(tmp_path / "cli.jsonl"), moved])
    assert imported.exit_code == 0 and "imported session cli into" in imported.stderr
    for result in (ran, listed, shown, replayed, exported, imported):
        assert PASSWORD not in result.stdout + result.stderr
    assert "***" in shown.stderr + imported.stderr


def test_a_client_given_a_postgres_url_journals_there(postgres_dsn: str) -> None:
    @tool
    def record(n: int) -> str:
        """Record item n."""
        return f"recorded {n}"

    with ScriptedServer(answer) as server:
        options = AgentOptions(
            model="scripted",
            base_url=server.url,
            api_key="sk-test",
            tools=[record],
            auto_execute_tools=True,
            journal=postgres_dsn,
            session_id="url",
        )

        async def main() -> None:
            async with Client(options) as client:
                await client.query("record 7")
                await client.wait()

        anyio.run(main)
    journal = PostgresJournal(postgres_dsn)
    assert [t.text for t in load_session(journal, "url").turns] == ["done: recorded 7"]
    assert json.loads(sql(postgres_dsn, "SELECT count(*)::text FROM toolreel_leases")[0][0]) == 0
    journal.close()


def test_importing_toolreel_loads_no_psycopg_until_a_postgres_journal_is_asked_for() -> None:
    probe = (
        "import sys, toolreel.shell, toolreel.adapters, toolreel.cli\n"
        "before = 'psycopg' in sys.modules\n"
        "from toolreel.adapters import PostgresJournal\n"
        "print(before, 'psycopg' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
