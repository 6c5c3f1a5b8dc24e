"""`diff_sessions` says where a fork or a rerun parts from its original, then turn by turn how.

The sessions are made end to end over HTTP on 127.0.0.1 by the scripted models of
tests/shell/whatif_tools.py; the pure matching of tool calls is pinned last.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest
from whatif_tools import PROMPT, arith, options, record

from toolreel.adapters import CallChange, MemoryJournal, diff_sessions
from toolreel.adapters._session_diff import diff_calls
from toolreel.core import ToolCall, ToolResult
from toolreel.shell import Budget, Edit, Price, fork, rerun
from toolreel.shell._scripted import ScriptedServer

FORK_DIFF = """\
sessions orig and f part at step 8, turn 1
(- orig, + f)
turn 1: 'What is 2+3 then times 4?'
  answer:
    -The answer is 20.
    +The answer is 40.
  tool calls:
    add result changed:
      -5
      +10
    multiply arguments changed:
       {
      -  "a": 5,
      +  "a": 10,
         "b": 4
       }
total usage: 45 tokens (30 in, 15 out) → 45 tokens (30 in, 15 out)"""


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(arith) as running:
        yield running


@pytest.fixture
def journal(server: ScriptedServer) -> MemoryJournal:
    made = MemoryJournal()
    record(options(server, made, session_id="orig"), PROMPT)
    return made


def test_a_fork_parts_from_its_original_after_the_shared_steps(
    server: ScriptedServer, journal: MemoryJournal
) -> None:
    client = fork(
        journal,
        "orig",
        at_round=1,
        edit=Edit(results={"a_add": "10"}),
        into="f",
        options=options(server, journal),
    )

    async def go_on() -> None:
        async with client:
            await client.wait()

    anyio.run(go_on)
    diff = diff_sessions("orig", "f", journal=journal)
    origin = journal.origin("f")
    assert origin is not None and origin.seq is not None
    assert diff.parted_at == origin.seq + 1
    assert str(diff) == FORK_DIFF
    data = json.loads(json.dumps(diff.data()))  # JSON-ready, for `toolreel diff --json`
    assert data["parted_at"] == 8 and data["turns"][0]["answer_diff"] == [
        "-The answer is 20.",
        "+The answer is 40.",
    ]
    assert [change["field"] for change in data["turns"][0]["calls"]] == ["result", "arguments"]


def test_a_rerun_with_another_model_differs_in_its_answer_calls_and_cost(
    server: ScriptedServer, journal: MemoryJournal
) -> None:
    priced = Budget(prices={"arith-b": Price(input_per_million=1.0, output_per_million=2.0)})
    opts = options(server, None, model="arith-b", budget=priced)
    result = anyio.run(lambda: rerun(journal, "orig", options=opts, tools="live", into="b"))
    diff = diff_sessions(result.original, result.session)  # Sessions: no steps compared
    assert diff.parted_at is None and diff.parted_turn == 1
    assert diff.turns[0].calls == (
        CallChange(kind="changed", name="multiply", a='{"a": 5, "b": 4}', b='{"a": 4, "b": 5}'),
    )
    assert diff.cost == (None, pytest.approx(30 / 1e6 + 2 * 15 / 1e6))
    assert "total cost: unpriced → $0.000060" in diff.text
    assert diff_sessions("orig", "b", journal=journal).parted_at == 1  # the request's model


def test_a_session_does_not_differ_from_itself(journal: MemoryJournal) -> None:
    diff = diff_sessions("orig", "orig", journal=journal)
    assert not diff and diff.parted_turn is None
    assert str(diff) == "sessions orig and orig do not differ"


def test_ids_need_their_journal(journal: MemoryJournal) -> None:
    with pytest.raises(ValueError, match="journal"):
        diff_sessions("orig", "orig")


def _run(call_id: str, name: str, arguments: str, output: str = "1") -> tuple[ToolCall, ToolResult]:
    call = ToolCall(id=call_id, name=name, arguments=arguments)
    return call, ToolResult(call_id=call_id, name=name, content=output)


def test_calls_match_by_name_and_canonical_arguments_then_by_name() -> None:
    before = [
        _run("1", "add", '{"a": 1, "b": 2}', "3"),
        _run("2", "search", '{"q": "x"}'),
        _run("3", "delete", "{}"),
    ]
    after = [
        _run("9", "add", '{"b":2,"a":1}', "3"),  # the same call, canonically
        _run("8", "search", '{"q": "y"}'),
        _run("7", "publish", '{"text": "3"}'),
    ]
    assert diff_calls(before, after) == [
        CallChange(kind="changed", name="search", a='{"q": "x"}', b='{"q": "y"}'),
        CallChange(kind="added", name="publish", b='{"text": "3"}'),
        CallChange(kind="removed", name="delete", a="{}"),
    ]
