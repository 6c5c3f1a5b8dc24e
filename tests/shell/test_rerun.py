"""A rerun asks a recorded session's prompts again under other options, its tools served.

End to end over HTTP on 127.0.0.1: the original is a session of the scripted model
"arith-a"; the rerun asks "arith-b", which calls add with its arguments in another
order (the same call, canonically: served) and multiply with other arguments (a call
no recording has) — tests/shell/whatif_tools.py.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from whatif_tools import PROMPT, RUNS, arith, options

from toolreel.adapters import (
    JSONLJournal,
    MemoryJournal,
    Session,
    SessionOrigin,
    SQLiteJournal,
    canonical_arguments,
    diff_sessions,
    load_session,
)
from toolreel.core import ConfigError, ImagePart, ToolCall
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSession,
    Client,
    OutputTool,
    RerunResult,
    RerunStopped,
    SessionError,
    replay,
    rerun,
)
from toolreel.shell._rerun import Outcome, ToolRecording
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


def recorded(server: ScriptedServer, journal: Any, *prompts: str, decide: Any = None) -> None:
    """Session "orig" of arith-a: the prompts as its turns, held calls decided by `decide`."""

    async def turns() -> None:
        async with Client(options(server, journal, session_id="orig")) as client:
            for prompt in prompts:
                await client.query(prompt)
                await client.wait()
                if client.pending_approvals and decide is not None:
                    await decide(client, client.pending_approvals[0].call.id)
                    await client.wait()

    anyio.run(turns)
    RUNS.clear()


def rerun_now(journal: Any, server: ScriptedServer, **kwargs: Any) -> RerunResult:
    """Rerun "orig" into "b" with arith-b (unless `options` are given)."""
    kwargs.setdefault("options", options(server, None, model="arith-b"))

    async def go() -> RerunResult:
        return await rerun(journal, "orig", into="b", **kwargs)

    return anyio.run(go)


def test_a_recorded_rerun_serves_matched_calls_and_answers_others_with_an_error(
    server: ScriptedServer, journal: Any
) -> None:
    recorded(server, journal, PROMPT)
    result = rerun_now(journal, server, tools="recorded")

    assert RUNS == []  # nothing ran: add was served, multiply(4, 5) was not recorded
    assert result.served == 1
    assert [(call.name, canonical_arguments(call.arguments)) for call in result.unmatched] == [
        ("multiply", '{"a":4,"b":5}')
    ]
    answer = result.session.turns[0].text
    assert answer.startswith("could not compute: no recording has a call of multiply")
    assert result.session_id == "b" and result.session.session_id == "b"
    assert result.session.config.model == "arith-b"
    assert result.original.turns[0].text == "The answer is 20."
    assert result.session.origin == SessionOrigin(
        kind="rerun", session_id="orig", note="model arith-b, tools recorded"
    )
    assert load_session(journal, "b").origin == result.session.origin
    assert isinstance(replay(journal, "b"), Session)  # journaled, and replays clean


def test_a_live_rerun_runs_the_calls_no_recording_has(server: ScriptedServer) -> None:
    journal = MemoryJournal()
    recorded(server, journal, PROMPT)
    result = rerun_now(journal, server, tools="live")
    assert RUNS == ["multiply(4, 5)"]
    assert result.session.turns[0].text == "B says 20."
    assert result.served == 1 and len(result.unmatched) == 1
    assert result.spent.model_calls == 3 and result.spent.usage.total_tokens == 45
    assert result.seconds > 0
    assert [finish.text for finish in result.finishes] == ["B says 20."]


def test_a_strict_rerun_stops_at_the_first_call_no_recording_has(server: ScriptedServer) -> None:
    journal = MemoryJournal()
    recorded(server, journal, PROMPT)
    with pytest.raises(RerunStopped, match="no recording has a call of multiply") as raised:
        rerun_now(journal, server, tools="strict")
    assert raised.value.call.name == "multiply"
    assert RUNS == []
    assert "b" in journal.sessions()  # what it did so far is kept, and replays
    assert isinstance(replay(journal, "b"), Session)


def test_a_rerun_with_the_same_model_reproduces_the_session_without_running_a_tool(
    server: ScriptedServer,
) -> None:
    journal = MemoryJournal()
    recorded(server, journal, PROMPT, PROMPT)  # the same calls twice: each served once
    result = rerun_now(journal, server, options=options(server, None), tools="strict")
    assert RUNS == []
    assert result.served == 4 and result.unmatched == ()
    assert [turn.text for turn in result.session.turns] == ["The answer is 20."] * 2
    assert result.session.history == result.original.history


def test_the_same_call_twice_is_served_its_recorded_outputs_in_order() -> None:
    call = ToolCall(id="x", name="add", arguments='{"a": 1, "b": 2}')
    recording = ToolRecording([(call, Outcome(output="3")), (call, Outcome(output="4"))])
    again = ToolCall(id="y", name="add", arguments='{"b":2,"a":1}')
    assert [recording.take(again), recording.take(again), recording.take(again)] == [
        Outcome(output="3"),
        Outcome(output="4"),
        None,
    ]
    assert recording.served == 2 and recording.unmatched == [again]


def test_a_rerun_decides_held_calls_as_the_original_did(server: ScriptedServer) -> None:
    journal = MemoryJournal()

    async def deny(client: Client, call_id: str) -> None:
        await client.deny(call_id, "not today")

    recorded(server, journal, "Publish 2+3 then times 4", decide=deny)
    result = rerun_now(journal, server, options=options(server, None), tools="recorded")
    assert not result.paused
    assert result.session.turns[0].text == result.original.turns[0].text
    assert "not today" in result.session.turns[0].text
    assert RUNS == []


def test_a_rerun_ends_paused_where_the_original_has_no_more_decisions(
    server: ScriptedServer,
) -> None:
    journal = MemoryJournal()
    recorded(server, journal, "Publish 2+3 then times 4")  # left waiting for approval
    result = rerun_now(journal, server, tools="live")
    assert result.paused and result.finishes == ()
    assert [request.call.name for request in result.session.approvals] == ["publish"]


def test_a_recorded_rerun_needs_no_importable_tools_but_a_live_one_names_them(
    server: ScriptedServer,
) -> None:
    journal = MemoryJournal()
    recorded(server, journal, PROMPT)
    bare = options(server, None, tools=[])
    served = rerun_now(journal, server, options=bare, tools="recorded")
    assert served.session.turns[0].text == "The answer is 20."
    assert RUNS == []
    with pytest.raises(ConfigError, match="add, multiply, publish"):
        anyio.run(lambda: rerun(journal, "orig", options=bare, tools="live", into="c"))


def test_a_rerun_into_a_session_that_exists_or_with_an_unknown_mode_is_refused(
    server: ScriptedServer,
) -> None:
    journal = MemoryJournal()
    recorded(server, journal, PROMPT)
    opts = options(server, None)
    with pytest.raises(SessionError, match="already exists"):
        anyio.run(lambda: rerun(journal, "orig", options=opts, into="orig"))
    with pytest.raises(ConfigError, match="'recorded', 'live' or 'strict'"):
        anyio.run(lambda: rerun(journal, "orig", options=opts, tools="cached", into="c"))  # type: ignore[arg-type]
    assert journal.sessions() == ["orig"]


def test_a_rerun_asks_each_prompt_with_its_images(server: ScriptedServer) -> None:
    journal = MemoryJournal()
    png = ImagePart(media_type="image/png", data=b"\x89PNG\r\n\x1a\n" + b"\x00" * 8)

    async def with_image() -> None:
        async with Client(options(server, journal, session_id="orig")) as client:
            await client.query(PROMPT, images=[png])
            await client.wait()

    anyio.run(with_image)
    result = rerun_now(journal, server, options=options(server, None), tools="strict")
    assert result.session.turns[0].images == result.original.turns[0].images == (png,)
    assert result.session.turns[0].text == "The answer is 20."
    sent = server.requests[-1]["messages"][0]["content"]
    assert isinstance(sent, list) and any(part.get("type") == "image_url" for part in sent)


# --- sessions written by older code (tests/shell/journals, bfd8293) -----------------------

JOURNALS = Path(__file__).parent / "journals"


def _old_model(session_id: str) -> Any:
    """The model that wrote `session_id` of the bfd8293 journals, giving its replies again."""
    spec = importlib.util.spec_from_file_location("make_journals", JOURNALS / "make_journals.py")
    assert spec is not None and spec.loader is not None
    made = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(made)
    replies = {
        "budget": [
            made.calls(("add", '{"a":1,"b":2}')),
            made.calls(("add", '{"a":3,"b":4}'), ("add", '{"a":5,"b":6}')),
            made.answer("3, 7 and 11"),
        ],
        "approvals": [
            made.calls(("delete", '{"path":"a.txt"}'), ("delete", '{"path":"b.txt"}')),
            made.answer("one deleted"),
        ],
        "images": [made.calls(("snapshot", "{}")), made.answer("a dot")],
    }[session_id]
    return made.scripted(*replies)


@pytest.mark.parametrize("suffix", ["db", "jsonl"])
@pytest.mark.parametrize("session_id", ["budget", "approvals", "images"])
def test_an_older_journal_s_session_reruns_to_the_same_history_without_its_tools(
    tmp_path: Path, suffix: str, session_id: str
) -> None:
    path = tmp_path / f"old.{suffix}"
    shutil.copy(JOURNALS / f"bfd8293.{suffix}", path)
    opened = SQLiteJournal(path) if suffix == "db" else JSONLJournal(path)
    try:
        bare = AgentOptions(model="m", budget=opened.config(session_id).budget)
        result = anyio.run(
            lambda: rerun(
                opened, session_id, options=bare, tools="strict", into="again",
                model=_old_model(session_id),
            )
        )  # fmt: skip
        assert result.session.history == result.original.history  # approvals, images and all
        assert diff_sessions(result.original, result.session).parted_turn is None
        assert result.unmatched == () and not result.paused
        assert isinstance(replay(opened, "again"), Session)
    finally:
        opened.close()


@pytest.mark.parametrize("helpers", ["declared", "given"])
def test_an_agent_run_reruns_through_its_definition_its_helpers_served(
    tmp_path: Path, helpers: str
) -> None:
    spec = importlib.util.spec_from_file_location("make_journals", JOURNALS / "make_journals.py")
    assert spec is not None and spec.loader is not None
    made = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(made)
    path = tmp_path / "old.db"
    shutil.copy(JOURNALS / "bfd8293.db", path)
    journal = SQLiteJournal(path)
    try:
        definition = AgentDefinition(
            build_prompt=lambda text: f"Sum: {text}",
            output=OutputTool.of(made.Total, name="total"),
            helpers=[made.add] if helpers == "given" else [],
        )
        model = made.scripted(
            made.calls(("add", '{"a":20,"b":22}')), made.calls(("total", '{"total":42}'))
        )
        opts = AgentOptions(model="m")
        with pytest.raises(ConfigError, match="AgentDefinition"):
            anyio.run(lambda: rerun(journal, "agent", options=opts, into="x", model=model))
        result = anyio.run(
            lambda: rerun(
                journal, "agent", options=opts, tools="strict", into="again", model=model,
                agent=definition,
            )
        )  # fmt: skip
        assert isinstance(result.session, AgentSession)
        assert result.session.outcome == result.original.outcome  # type: ignore[union-attr]
        assert result.session.history == result.original.history
        assert result.served == 1 and len(result.finishes) == 1
        assert journal.origin("again") == SessionOrigin(
            kind="rerun", session_id="agent", note="model m, tools strict"
        )
        assert isinstance(replay(journal, "again"), AgentSession)
        same = diff_sessions("agent", "again", journal=journal)
        assert same.parted_turn is None and same.turns[0].answer_b == '{"total":42}'
    finally:
        journal.close()
