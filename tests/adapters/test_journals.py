"""The three journals keep the same things: configs over time, steps in order."""

from __future__ import annotations

import json
import sqlite3

import pytest

from toolreel.adapters import (
    JSONLJournal,
    MemoryJournal,
    SessionBusy,
    SessionNotFound,
    SQLiteJournal,
    Step,
    effect_record,
    event_to_json,
    load_session,
    unstructure,
)
from toolreel.adapters._journal import current_records
from toolreel.core import Cancelled, Finish, LoopConfig, PromptSubmitted, Usage, initial_state, step
from toolreel.core.hooks import Blocked
from toolreel.core.outcomes import Capped, Completed, Failed, FailureCode
from toolreel.core.policies import MaxIterationsPolicy


@pytest.fixture(params=["memory", "sqlite", "jsonl", "postgres"])
def journal(request, tmp_path):
    made = {
        "memory": MemoryJournal,
        "sqlite": lambda: SQLiteJournal(tmp_path / "j.db"),
        "jsonl": lambda: JSONLJournal(tmp_path / "j.jsonl"),
        "postgres": lambda: request.getfixturevalue("postgres_journal"),
    }[request.param]()
    yield made
    made.close()


def test_configs_are_kept_with_the_step_they_apply_after(journal) -> None:
    first, second = LoopConfig(model="a"), LoopConfig(model="b")
    lease = journal.begin("s", first)
    _, effects = step(initial_state(first), PromptSubmitted(text="hi"))
    journal.append("s", [Step(seq=1, event=PromptSubmitted(text="hi"), effects=effects)])
    journal.release(lease)
    lease = journal.begin("s", first, from_seq=1)  # unchanged: nothing new recorded
    journal.release(lease)
    journal.begin("s", second, from_seq=1)
    assert journal.configs("s") == [(0, first), (1, second)]
    assert journal.config("s") == second
    assert [entry.seq for entry in journal.entries("s")] == [1]
    assert journal.sessions() == ["s"]
    with pytest.raises(SessionNotFound):
        journal.config("nope")


OLD_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, started INTEGER NOT NULL);
CREATE TABLE configs (session_id TEXT NOT NULL, from_seq INTEGER NOT NULL, config TEXT NOT NULL,
    PRIMARY KEY (session_id, from_seq)) WITHOUT ROWID;
CREATE TABLE steps (session_id TEXT NOT NULL, first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (session_id, first_seq)) WITHOUT ROWID;
"""


def test_a_journal_file_from_before_leases_and_checksums_opens_and_takes_new_steps(
    tmp_path,
) -> None:
    path = tmp_path / "old.db"
    config = LoopConfig(model="a")
    first = Step(seq=1, event=PromptSubmitted(text="hi"), effects=())
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute("INSERT INTO sessions VALUES ('s', 0)")
    db.execute("INSERT INTO configs VALUES ('s', 0, ?)", (json.dumps(unstructure(config)),))
    body = json.dumps([[1, json.loads(event_to_json(first.event)), []]])
    db.execute("INSERT INTO steps VALUES ('s', 1, 1, ?)", (body,))
    db.commit()
    db.close()
    journal, other = SQLiteJournal(path), SQLiteJournal(path)
    journal.begin("s", config, from_seq=1)
    with pytest.raises(SessionBusy):
        other.begin("s", config, from_seq=1)
    journal.append("s", [Step(seq=2, event=Cancelled(), effects=())])
    assert [entry.seq for entry in other.entries("s")] == [1, 2]
    assert load_session(other, "s").warnings == ()
    journal.close()
    other.close()


USAGE = Usage(input_tokens=1, output_tokens=2)
_OLD_FINISH = {
    "type": "Finish",
    "iterations": 3,
    "usage": {"input_tokens": 1, "output_tokens": 2, "extra": []},
    "rounds_count": 0,
    "rounds_digest": "",
}
_NO_OUTCOME = {"error": None, "model_finish_reason": None, "block_reason": None, "text": ""}


@pytest.mark.parametrize(
    ("old", "outcome"),
    [
        (
            {"reason": "completed", "text": "hi", "model_finish_reason": "stop"},
            Completed(text="hi", model_finish_reason="stop"),
        ),
        (
            {"reason": "completed", "text": "4", "max_iterations_reached": True},
            Capped(text="4", policy=MaxIterationsPolicy.FINAL_ANSWER),
        ),
        (
            {"reason": "max_iterations", "max_iterations_reached": True},
            Capped(text="", policy=MaxIterationsPolicy.STOP),
        ),
        (
            {"reason": "failed", "error": {"kind": "model_error", "message": "no", "status": 401}},
            Failed(code=FailureCode.MODEL_ERROR, message="no", status=401),
        ),
        ({"reason": "cancelled"}, Cancelled()),
        ({"reason": "blocked", "block_reason": "not allowed"}, Blocked(reason="not allowed")),
    ],
)
def test_an_old_finish_record_reads_as_todays_with_its_outcome(old, outcome) -> None:
    recorded = {**_OLD_FINISH, **_NO_OUTCOME, **old}
    today = effect_record(
        Finish(
            outcome=outcome, rounds=(), iterations=3, usage=Usage(input_tokens=1, output_tokens=2)
        )
    )
    assert today != recorded
    assert current_records((recorded,)) == (today,)
