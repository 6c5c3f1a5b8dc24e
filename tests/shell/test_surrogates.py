"""Text that is valid JSON but not valid UTF-8 (a lone surrogate, `"\\ud800"` or an undecodable
byte read with surrogateescape), from every side a turn takes text from (issue 20, item 3).

From the caller (a prompt, a manual result, a denial's reason) it is refused and
nothing is journaled; from a model, a tool or a hook it is kept with U+FFFD in
its place, journaled as the loop saw it, so the session replays clean. On SQLite,
JSONL and PostgreSQL journals (the last skips where no server can start).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from toolreel.adapters import (
    AgentSession,
    EventModel,
    Journal,
    JSONLJournal,
    Session,
    SQLiteJournal,
    load_session,
    render_transcript,
)
from toolreel.core import (
    ConfigError,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    UsageError,
)
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentRunOptions,
    AgentSuccess,
    Client,
    Connection,
    OutputTool,
    execute_agent,
    replay,
    run,
    tool,
)
from toolreel.shell.hooks import HOOK_PRE_TOOL_USE, HookDecision
from toolreel.shell.scripted import ScriptedServer, text, tool_calls

LONE = "\ud800"
BYTE = b"\xff".decode("utf-8", "surrogateescape")  # "\udcff"
FFFD = "\ufffd"
ECHOED: list[str] = []


@tool
def echo(s: str) -> str:
    """Echo `s`, and a byte a file held that is not UTF-8."""
    ECHOED.append(s)
    return f"{s} {BYTE}"


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (not really)."""
    return f"deleted {path}"


Reopen = Callable[[], Journal]


@pytest.fixture(params=["sqlite", "jsonl", "postgres"])
def journals(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Journal, Reopen]]:
    """A journal for the session, and how to open it afresh for the replay."""
    if request.param == "postgres":
        from toolreel.adapters import PostgresJournal  # noqa: PLC0415 - needs psycopg

        dsn = request.getfixturevalue("postgres_dsn")
        opened: list[Journal] = [PostgresJournal(dsn)]
        make: Reopen = lambda: PostgresJournal(dsn)  # noqa: E731
    else:
        path = tmp_path / ("j.db" if request.param == "sqlite" else "j.jsonl")
        kind = SQLiteJournal if request.param == "sqlite" else JSONLJournal
        opened = [kind(path)]
        make = lambda: kind(path)  # noqa: E731

    def reopen() -> Journal:
        opened.append(make())
        return opened[-1]

    yield opened[0], reopen
    for journal in opened:
        journal.close()


def replayed(reopen: Reopen, session_id: str = "s") -> Session:
    """The session replayed from the journal opened afresh (a divergence fails the test)."""
    session = replay(reopen(), session_id)
    assert isinstance(session, Session), session
    return session


def step_events(journal: Journal, session_id: str = "s") -> list[Any]:
    """The events the journal holds for the session, in order."""
    return [entry.event for entry in journal.entries(session_id)]


def writable(value: str) -> bool:
    """Whether the text is valid UTF-8, as every journal and every response needs."""
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def calls_echo_then_answers(fragment: str) -> EventModel:
    """A model calling `echo` with `fragment` as the arguments, then answering."""

    def answer(request: Any) -> list[Any]:
        if len(request.messages) == 1:
            return [
                ToolCallStarted(index=0, call_id="c1", name="echo"),
                ToolCallArgumentsDelta(index=0, fragment=fragment),
                ModelResponded(finish_reason="tool_calls"),
            ]
        return [TextDelta(text="done"), ModelResponded()]

    return EventModel(answer)


async def one_turn(journal: Journal, model: Any, prompt: str = "go", **extra: Any) -> Any:
    """One turn of session "s", tools executed; its Finish."""
    options = AgentOptions(
        model="m",
        tools=[echo],
        auto_execute_tools=True,
        journal=journal,
        session_id="s",
        **extra,
    )
    async with Client(options, model=model) as client:
        await client.query(prompt)
        return await client.wait()


# --- from a model, a tool, a hook: kept with U+FFFD, journaled as seen ---------------------


def test_model_text_with_a_lone_surrogate_is_kept_with_the_replacement_character(
    journals: tuple[Journal, Reopen],
) -> None:
    journal, reopen = journals
    model = EventModel(lambda _: [TextDelta(text=f"bad {LONE} text"), ModelResponded()])
    finish = anyio.run(one_turn, journal, model)
    assert finish.text == f"bad {FFFD} text"
    assert TextDelta(text=f"bad {FFFD} text") in step_events(reopen())
    assert replayed(reopen).turns[0].text == f"bad {FFFD} text"


def test_tool_arguments_with_a_lone_surrogate_reach_the_tool_replaced(
    journals: tuple[Journal, Reopen],
) -> None:
    journal, reopen = journals
    ECHOED.clear()
    finish = anyio.run(one_turn, journal, calls_echo_then_answers(f'{{"s": "a{LONE}"}}'))
    assert [f"a{FFFD}"] == ECHOED
    (result,) = finish.rounds[0].results
    assert result.content == f"a{FFFD} {FFFD}"  # the tool's own bad byte too
    session = replayed(reopen)
    (call,) = session.history[-1].tool_rounds[0].tool_calls
    assert call.arguments == f'{{"s": "a{FFFD}"}}'


def test_a_tool_result_with_a_lone_surrogate_is_kept_with_the_replacement_character(
    journals: tuple[Journal, Reopen],
) -> None:
    journal, reopen = journals
    finish = anyio.run(one_turn, journal, calls_echo_then_answers('{"s": "x"}'))
    assert finish.rounds[0].results[0].content == f"x {FFFD}"
    outputs = [e.output for e in step_events(reopen()) if isinstance(e, ToolFinished)]
    assert outputs == [f"x {FFFD}"]
    replayed(reopen)


def test_a_hooks_reason_with_a_lone_surrogate_is_kept_with_the_replacement_character(
    journals: tuple[Journal, Reopen],
) -> None:
    journal, reopen = journals

    def refuse(_: object) -> HookDecision:
        return HookDecision(continue_=False, reason=f"not {BYTE} today")

    model = calls_echo_then_answers('{"s": "x"}')
    finish = anyio.run(lambda: one_turn(journal, model, hooks={HOOK_PRE_TOOL_USE: [refuse]}))
    (result,) = finish.rounds[0].results
    assert result.is_error and f"not {FFFD} today" in result.content
    replayed(reopen)


def test_a_model_over_http_sending_escaped_halves_of_pairs(
    journals: tuple[Journal, Reopen],
) -> None:
    """The OpenAI-compatible codec, end to end: JSON escapes in text and in arguments."""
    journal, reopen = journals
    ECHOED.clear()
    script = [
        tool_calls(
            ("c1", "echo", f'{{"s": "raw {LONE}"}}'),  # a surrogate in the arguments' text
            ("c2", "echo", {"s": f"escaped {LONE}"}),  # an escape inside the arguments' JSON
            text=f"calling {LONE}",
        ),
        text(f"done {LONE}"),
    ]
    with ScriptedServer(script) as server:
        finish = anyio.run(lambda: one_turn(journal, None, base_url=server.url, api_key="sk-x"))
    assert finish.text == f"done {FFFD}"
    assert sorted(ECHOED) == sorted([f"raw {FFFD}", f"escaped {LONE}"])  # the tool's own JSON
    session = replayed(reopen)
    transcript = render_transcript(session)
    assert writable(transcript)
    assert f"escaped {FFFD}" in transcript and f"calling {FFFD}" in transcript
    assert writable(json.dumps(load_session(reopen(), "s").history[-1].content))


# --- from the caller: refused, nothing journaled --------------------------------------------


def test_a_prompt_with_a_lone_surrogate_is_refused_and_nothing_is_journaled(
    journals: tuple[Journal, Reopen],
) -> None:
    journal, reopen = journals
    model = EventModel(lambda _: [TextDelta(text="hi"), ModelResponded()])

    async def turns() -> Any:
        options = AgentOptions(model="m", journal=journal, session_id="s")
        async with Client(options, model=model) as client:
            with pytest.raises(ConfigError, match=r"^prompt='hello \\udcff'"):
                await client.query(f"hello {BYTE}")
            assert step_events(journal) == []
            await client.query("hello")  # the session goes on
            return await client.wait()

    assert anyio.run(turns).text == "hi"
    assert [turn.prompt for turn in replayed(reopen).turns] == ["hello"]
    assert len(model.requests) == 1


def test_run_refuses_such_a_prompt_before_any_session_begins(
    journals: tuple[Journal, Reopen],
) -> None:
    journal, _ = journals
    options = AgentOptions(model="m", journal=journal, session_id="s")
    with pytest.raises(ConfigError, match=r"^prompt="):
        anyio.run(lambda: run(f"hello {LONE}", options, model=EventModel(lambda _: [])))
    assert journal.sessions() == []


def test_a_manual_result_with_a_lone_surrogate_is_refused(
    journals: tuple[Journal, Reopen],
) -> None:
    journal, reopen = journals

    async def turn() -> Any:
        options = AgentOptions(model="m", tools=[echo], journal=journal, session_id="s")
        async with Client(options, model=calls_echo_then_answers('{"s": "x"}')) as client:
            await client.query("go")
            async for _ in client.events():
                pass
            with pytest.raises(UsageError, match="not valid Unicode text"):
                await client.add_tool_result("c1", f"read {BYTE}")
            assert list(client.pending_tool_calls()) == ["c1"]
            await client.add_tool_result("c1", "read")
            return await client.wait()

    assert anyio.run(turn).rounds[0].results[0].content == "read"
    replayed(reopen)


def test_a_denial_reason_with_a_lone_surrogate_is_refused(
    journals: tuple[Journal, Reopen],
) -> None:
    journal, reopen = journals

    def answer(request: Any) -> list[Any]:
        if len(request.messages) == 1:
            return [
                ToolCallStarted(index=0, call_id="c1", name="delete"),
                ToolCallArgumentsDelta(index=0, fragment='{"path": "a"}'),
                ModelResponded(finish_reason="tool_calls"),
            ]
        return [TextDelta(text="kept"), ModelResponded()]

    async def turn() -> Any:
        options = AgentOptions(
            model="m", tools=[delete], auto_execute_tools=True, journal=journal, session_id="s"
        )
        async with Client(options, model=EventModel(answer)) as client:
            await client.query("delete a")
            await client.wait()
            with pytest.raises(ConfigError, match=r"^reason="):
                await client.deny("c1", f"no {LONE}")
            assert [r.call.id for r in client.pending_approvals] == ["c1"]
            await client.deny("c1", "no")
            return await client.wait()

    assert anyio.run(turn).text == "kept"
    replayed(reopen)


# --- an agent run -------------------------------------------------------------------------


def agent_model() -> EventModel:
    """A model: text with a lone surrogate, a helper call, then the output."""

    def answer(request: Any) -> list[Any]:
        if len(request.messages) == 1:
            return [
                TextDelta(text=f"let me see {LONE}"),
                ToolCallStarted(index=0, call_id="c1", name="echo"),
                ToolCallArgumentsDelta(index=0, fragment='{"s": "x"}'),
                ModelResponded(finish_reason="tool_calls"),
            ]
        return [
            ToolCallStarted(index=0, call_id="c2", name="final_result"),
            ToolCallArgumentsDelta(index=0, fragment=f'{{"text": "a {LONE}"}}'),
            ModelResponded(finish_reason="tool_calls"),
        ]

    return EventModel(answer)


@attrs.frozen
class Said:
    """The agent's output."""

    text: str


def definition(build: Callable[[str], Any] = lambda text: text) -> AgentDefinition[str, Said]:
    """An agent whose output is a `Said`, with `echo` as its helper."""
    return AgentDefinition(
        build_prompt=build, output=OutputTool.of(Said, name="final_result"), helpers=[echo]
    )


def test_an_agent_run_keeps_such_text_replaced_and_replays_clean(
    journals: tuple[Journal, Reopen],
) -> None:
    journal, reopen = journals
    options = AgentRunOptions(connection=Connection(model="m"))
    result = anyio.run(
        lambda: execute_agent(
            definition(), "go", options, model=agent_model(), journal=journal, session_id="s"
        )
    )
    assert isinstance(result, AgentSuccess)
    assert result.output == Said(text=f"a {FFFD}")
    session = replay(reopen(), "s")
    assert isinstance(session, AgentSession), session


@pytest.mark.parametrize("prompt", [f"go {LONE}", None, 7])
def test_an_agent_prompt_that_is_none_is_refused_before_its_session_begins(
    journals: tuple[Journal, Reopen], prompt: object
) -> None:
    journal, _ = journals
    options = AgentRunOptions(connection=Connection(model="m"))
    with pytest.raises(ConfigError, match=r"^prompt="):
        anyio.run(
            lambda: execute_agent(
                definition(lambda _: prompt),
                "go",
                options,
                model=agent_model(),
                journal=journal,
                session_id="s",
            )
        )
    assert journal.sessions() == []
