"""A fork shares its original's steps up to the fork point, byte for byte, then goes on live.

End to end over HTTP on 127.0.0.1: the original is a session of the scripted model
"arith-a" (tests/shell/whatif_tools.py); the fork goes on with the model its options
name, through a Client over the new session, in every kind of journal.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from whatif_tools import PROMPT, RUNS, arith, options, record

from toolreel.adapters import (
    JournalEntry,
    JSONLJournal,
    MemoryJournal,
    Session,
    SessionOrigin,
    SQLiteJournal,
    load_session,
)
from toolreel.core import ConfigError, FinishReason
from toolreel.shell import (
    Client,
    Edit,
    ReplayDiverged,
    SessionError,
    fork,
    replay,
)
from toolreel.shell._scripted import ScriptedServer


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(arith) as running:
        yield running


@pytest.fixture(params=["memory", "sqlite", "jsonl", "postgres"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    made = {
        "memory": MemoryJournal,
        "sqlite": lambda: SQLiteJournal(tmp_path / "j.db"),
        "jsonl": lambda: JSONLJournal(tmp_path / "j.jsonl"),
        "postgres": lambda: request.getfixturevalue("postgres_journal"),
    }[request.param]()
    yield made
    made.close()


def go_on(client: Client) -> Session:
    """Open the fork's Client, let its turn finish live, and return the session it made."""

    async def run() -> Session:
        async with client:
            await client.wait()
            return client.session()

    return anyio.run(run)


def entries(journal: Any, session_id: str) -> list[JournalEntry]:
    return list(journal.entries(session_id))


def test_a_fork_with_a_replaced_result_shares_the_steps_before_it_and_goes_on_live(
    server: ScriptedServer, journal: Any
) -> None:
    record(options(server, journal, session_id="orig"), PROMPT)
    RUNS.clear()
    edit = Edit(results={"a_add": "10"})
    client = fork(
        journal, "orig", at_round=1, edit=edit, into="forked", options=options(server, journal)
    )
    forked = go_on(client)

    assert forked.turns[0].text == "The answer is 40."  # the model read 10, live
    assert RUNS == ["multiply(10, 4)"]  # the live part ran the tool; add was never run again
    assert load_session(journal, "orig").turns[0].text == "The answer is 20."  # untouched
    origin = forked.origin
    assert origin == SessionOrigin(
        kind="fork",
        session_id="orig",
        seq=origin.seq,
        turn=1,
        round=1,
        note="result of a_add replaced",
    )
    shared = origin.seq
    before, after = entries(journal, "orig"), entries(journal, "forked")
    assert shared > 1
    assert after[:shared] == before[:shared]  # byte for byte, as the journal holds them
    assert after[shared].event.output == "10" and before[shared].event.output == "5"
    assert isinstance(replay(journal, "forked"), Session)  # replays clean, like any session


def test_a_fork_at_the_start_of_a_turn_asks_the_edited_prompt(server: ScriptedServer) -> None:
    journal = MemoryJournal()
    record(options(server, journal, session_id="orig"), PROMPT, "What is 1+1 then times 3?")
    edit = Edit(prompt="What is 7+1 then times 2?")
    client = fork(journal, "orig", at_turn=2, edit=edit, into="f", options=options(server, journal))
    forked = go_on(client)
    assert [turn.prompt for turn in forked.turns] == [PROMPT, "What is 7+1 then times 2?"]
    assert [turn.text for turn in forked.turns] == ["The answer is 20.", "The answer is 16."]
    assert forked.origin is not None and forked.origin.turn == 2 and forked.origin.round is None
    shared = forked.origin.seq
    assert entries(journal, "f")[:shared] == entries(journal, "orig")[:shared]
    assert isinstance(
        entries(journal, "orig")[shared].event, type(entries(journal, "f")[shared].event)
    )
    assert isinstance(replay(journal, "f"), Session)


def test_a_system_prompt_edit_holds_from_the_fork_point_on_and_is_journaled_so(
    server: ScriptedServer,
) -> None:
    journal = MemoryJournal()
    record(options(server, journal, session_id="orig"), PROMPT)
    edit = Edit(system="be brief")
    client = fork(
        journal, "orig", at_round=2, edit=edit, into="f", options=options(server, journal)
    )
    forked = go_on(client)
    assert forked.turns[0].text == "The answer is 20. [be brief]"
    configs = journal.configs("f")
    assert [config.system_prompt for _, config in configs] == [None, "be brief"]
    assert configs[1][0] == forked.origin.seq  # the config changes where the fork parts
    assert isinstance(replay(journal, "f"), Session)


def test_a_fork_goes_on_with_the_model_its_options_name(server: ScriptedServer) -> None:
    journal = MemoryJournal()
    record(options(server, journal, session_id="orig"), PROMPT)
    RUNS.clear()
    newer = options(server, journal, model="arith-b")
    forked = go_on(fork(journal, "orig", at_round=1, into="f", options=newer))
    assert forked.turns[0].text == "B says 20."
    assert RUNS == ["multiply(4, 5)"]  # the new model's own call, run live
    assert forked.config.model == "arith-b"
    assert load_session(journal, "orig").config.model == "arith-a"


def test_a_fork_of_a_session_kept_at_a_path_reopens_the_path(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = str(tmp_path / "j.db")
    record(options(server, path, session_id="orig"), PROMPT)
    edit = Edit(results={"a_mul": "99"})
    forked = go_on(
        fork(path, "orig", at_round=2, edit=edit, into="f", options=options(server, path))
    )
    assert forked.turns[0].text == "The answer is 99."
    journal = SQLiteJournal(path)
    try:
        assert isinstance(replay(journal, "f"), Session)
    finally:
        journal.close()


def test_a_fork_whose_turn_pauses_for_approval_is_decided_like_any_session(
    server: ScriptedServer,
) -> None:
    journal = MemoryJournal()
    record(options(server, journal, session_id="orig"), "Publish 2+3 then times 4")
    edit = Edit(results={"a_mul": "7"})
    client = fork(
        journal, "orig", at_round=2, edit=edit, into="f", options=options(server, journal)
    )

    async def run() -> tuple[Any, Any]:
        async with client:
            paused = await client.wait()
            held = [request.call.name for request in client.pending_approvals]
            await client.approve(client.pending_approvals[0].call.id)
            return paused, (held, await client.wait())

    paused, (held, finish) = anyio.run(run)
    assert paused is None and held == ["publish"]
    assert finish.reason is FinishReason.COMPLETED and finish.text == "Published: published 7."


# --- what a fork refuses ---------------------------------------------------------------


@pytest.fixture
def recorded(server: ScriptedServer) -> MemoryJournal:
    journal = MemoryJournal()
    record(options(server, journal, session_id="orig"), PROMPT, "What is 1+1 then times 3?")
    return journal


def test_a_round_needs_its_turn_when_the_session_has_several(
    server: ScriptedServer, recorded: MemoryJournal
) -> None:
    with pytest.raises(ConfigError, match="several"):
        fork(recorded, "orig", at_round=1, into="f", options=options(server, recorded))
    forked = go_on(
        fork(
            recorded,
            "orig",
            at_turn=2,
            at_round=1,
            edit=Edit(results={"a_add": "5"}),
            into="f",
            options=options(server, recorded),
        )
    )
    assert [turn.text for turn in forked.turns] == ["The answer is 20.", "The answer is 15."]


@pytest.mark.parametrize(
    ("point", "edit", "message"),
    [
        ({"at_turn": 3}, Edit(), "a turn of the session"),
        ({"at_turn": 1, "at_round": 3}, Edit(), "a round that turn 1 completed"),
        ({"at_turn": 1, "at_round": 1}, Edit(results={"a_mul": "1"}), "a_add"),
        ({"at_turn": 1}, Edit(results={"a_add": "1"}), "at_round"),
        ({"at_turn": 1, "at_round": 1}, Edit(prompt="hi"), "at_turn alone"),
        ({}, Edit(), "a fork point"),
    ],
)
def test_a_fork_point_that_is_not_there_is_refused_before_anything_is_written(
    server: ScriptedServer, recorded: MemoryJournal, point: dict[str, int], edit: Edit, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        fork(recorded, "orig", **point, edit=edit, into="f", options=options(server, recorded))
    assert recorded.sessions() == ["orig"]


def test_a_fork_without_the_original_s_tools_names_the_missing_ones(
    server: ScriptedServer, recorded: MemoryJournal
) -> None:
    bare = options(server, recorded, tools=[])
    with pytest.raises(ConfigError, match="add, multiply, publish"):
        fork(recorded, "orig", at_turn=1, into="f", options=bare)
    assert recorded.sessions() == ["orig"]


def test_a_fork_into_a_session_that_exists_is_refused(
    server: ScriptedServer, recorded: MemoryJournal
) -> None:
    with pytest.raises(SessionError, match="already exists"):
        fork(recorded, "orig", at_turn=1, into="orig", options=options(server, recorded))


def test_an_original_that_does_not_replay_before_the_fork_point_is_reported_not_copied(
    server: ScriptedServer, recorded: MemoryJournal
) -> None:
    steps = entries(recorded, "orig")
    tampered = [attrs.evolve(steps[0], effects=steps[0].effects[:-1]), *steps[1:]]
    lease = recorded.begin("tampered", recorded.config("orig"))
    recorded.append_entries("tampered", tampered)
    recorded.release(lease)
    with pytest.raises(ReplayDiverged) as raised:
        fork(recorded, "tampered", at_turn=2, into="f", options=options(server, recorded))
    assert raised.value.divergence.seq == 1
    assert "f" not in recorded.sessions()


@pytest.mark.parametrize("suffix", ["db", "jsonl"])
def test_a_session_of_an_older_journal_forks_and_the_fork_replays(
    tmp_path: Path, suffix: str
) -> None:
    journals = Path(__file__).parent / "journals"
    spec = importlib.util.spec_from_file_location("make_journals", journals / "make_journals.py")
    assert spec is not None and spec.loader is not None
    made = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(made)
    path = tmp_path / f"old.{suffix}"
    shutil.copy(journals / f"bfd8293.{suffix}", path)
    journal = SQLiteJournal(path) if suffix == "db" else JSONLJournal(path)
    try:
        model = made.scripted(made.calls(("add", '{"a":30,"b":4}')), made.answer("33 and 34"))
        opts = made.options(journal, None, [made.add])
        edit = Edit(results={"add_0": '{"sum": 30}'})
        client = fork(journal, "budget", at_round=1, edit=edit, into="f", options=opts, model=model)
        forked = go_on(client)
        assert forked.turns[0].text == "33 and 34"
        shared = forked.origin.seq
        assert entries(journal, "f")[:shared] == entries(journal, "budget")[:shared]
        assert isinstance(replay(journal, "f"), Session)
    finally:
        journal.close()


def test_a_fork_keeps_the_config_changes_of_the_steps_it_shares(
    server: ScriptedServer, journal: Any
) -> None:
    record(options(server, journal, session_id="orig"), PROMPT)
    terse = options(server, journal, session_id="orig", system_prompt="be terse")
    record(terse, "What is 1+1 then times 3?")  # the session goes on under another config
    edit = Edit(results={"a_add": "7"})
    client = fork(
        journal,
        "orig",
        at_turn=2,
        at_round=1,
        edit=edit,
        into="f",
        options=attrs.evolve(terse, session_id=None),
    )
    forked = go_on(client)
    assert forked.turns[1].text == "The answer is 21. [be terse]"
    assert journal.configs("f") == journal.configs("orig")  # the same change, at the same step
    shared = forked.origin.seq
    assert entries(journal, "f")[:shared] == entries(journal, "orig")[:shared]
    assert isinstance(replay(journal, "f"), Session)
