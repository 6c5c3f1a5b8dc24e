"""Property: every session a Client journals replays clean, budgets, approvals and images too.

Generated sessions: one or two prompts (some with an image) under a drawn
`Budget`, a model that answers with rounds of tool calls (a tool that needs
approval, one that returns an image, a plain one) and usage with a
provider's extra counters, and the human's approvals and denials. Each is
written to a SQLite or a JSONL journal and replayed from it: no divergence
(issue 20, item 4: a budgeted session with two tool rounds diverged).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreel.adapters import (
    EventModel,
    JSONLJournal,
    Session,
    SQLiteJournal,
)
from toolreel.core import (
    ImagePart,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    Usage,
)
from toolreel.core.budget import Budget, BudgetPolicy, BudgetScope, Price
from toolreel.shell import AgentOptions, Client, replay, tool

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)
IMAGE = ImagePart(media_type="image/png", data=PNG)


@tool("add", "Add two integers", {"a": int, "b": int})
def add(args: dict[str, int]) -> dict[str, int]:
    """The sum."""
    return {"sum": args["a"] + args["b"]}


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (not really)."""
    return f"deleted {path}"


@tool
def snapshot() -> list[Any]:
    """A picture and a caption."""
    return ["the picture", IMAGE]


PRICES = {"m": Price(input_per_million=1.0, output_per_million=2.0)}
ARGUMENTS = {"add": '{"a":1,"b":2}', "delete": '{"path":"x"}', "snapshot": "{}"}
#: Limits, most often none (so that most sessions get as far as their approvals).
limits = st.sampled_from([None, None, None, 0, 1, 2, 4])
tight = st.builds(
    Budget,
    max_tool_calls=limits,
    max_model_calls=st.sampled_from([None, None, None, 1, 3, 5]),
    max_total_tokens=st.sampled_from([None, None, None, 0, 20, 60]),
    max_calls_per_tool=st.sampled_from([{}, {}, {"add": 1}, {"delete": 0}]),
    max_cost=st.sampled_from([None, None, None, 0.00001, 1.0]),
    prices=st.just(PRICES),
    scope=st.sampled_from(list(BudgetScope)),
    on_exceeded=st.sampled_from(list(BudgetPolicy)),
)
#: Budgets that report what is spent and seldom stop anything, or `tight` ones.
budgets = st.one_of(st.builds(Budget, max_tool_calls=st.just(20), prices=st.just(PRICES)), tight)
usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 20),
    output_tokens=st.integers(0, 20),
    extra=st.sampled_from([(), (("cache_read_input_tokens", 3),)]),
)
rounds = st.lists(st.sampled_from(sorted(ARGUMENTS)), min_size=1, max_size=3)
replies = st.lists(st.tuples(st.one_of(st.none(), rounds), usages), max_size=4)


def response(calls: list[str] | None, usage: Usage, number: int) -> list[Any]:
    """One response: the calls (by tool name), or text, with `usage`."""
    if calls is None:
        return [TextDelta(text="an "), TextDelta(text="answer"), ModelResponded(usage=usage)]
    events: list[Any] = []
    for index, name in enumerate(calls):
        events.append(ToolCallStarted(index=index, call_id=f"c{number}_{index}", name=name))
        events.append(ToolCallArgumentsDelta(index=index, fragment=ARGUMENTS[name]))
    return [*events, ModelResponded(finish_reason="tool_calls", usage=usage)]


def model_of(script: list[tuple[list[str] | None, Usage]]) -> EventModel:
    """A model answering with the script's responses in order, then with text."""
    left = list(script)
    made = iter(range(1000))

    def answer(_: object) -> list[Any]:
        calls, usage = left.pop(0) if left else (None, Usage(input_tokens=1))
        return response(calls, usage, next(made))

    return EventModel(answer)


async def converse(
    journal: Any,
    budget: Budget,
    script: list[tuple[list[str] | None, Usage]],
    prompts: list[bool],
    decisions: list[bool],
) -> None:
    """The prompts (True: with an image) as turns, each pause decided by `decisions` in turn."""
    options = AgentOptions(
        model="m",
        tools=[add, delete, snapshot],
        auto_execute_tools=True,
        budget=budget,
        journal=journal,
        session_id="s",
    )
    choices = iter(decisions * 20)
    async with Client(options, model=model_of(script)) as client:
        for number, with_image in enumerate(prompts):
            await client.query(f"prompt {number}", images=[IMAGE] if with_image else None)
            while await client.wait() is None and client.pending_approvals:
                for request in client.pending_approvals:
                    if next(choices, True):
                        await client.approve(request.call.id)
                    else:
                        await client.deny(request.call.id, "no")


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    kind=st.sampled_from(["db", "jsonl"]),
    budget=budgets,
    script=replies,
    prompts=st.lists(st.booleans(), min_size=1, max_size=2),
    decisions=st.lists(st.booleans(), min_size=1, max_size=3),
)
def test_a_journaled_session_replays_clean(
    kind: str,
    budget: Budget,
    script: list[tuple[list[str] | None, Usage]],
    prompts: list[bool],
    decisions: list[bool],
) -> None:
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / f"session.{kind}"
        opened = SQLiteJournal if kind == "db" else JSONLJournal
        journal = opened(path)
        try:
            anyio.run(converse, journal, budget, script, prompts, decisions)
        finally:
            journal.close()
        reading = opened(path)
        try:
            replayed = replay(reading, "s")
        finally:
            reading.close()
    assert isinstance(replayed, Session), replayed


def test_the_reported_session_replays_clean(tmp_path: Path) -> None:
    """The session of the issue: a budget and two tool rounds."""
    script = [(["add"], Usage(input_tokens=5)), (["add"], Usage(input_tokens=5))]
    for kind in ("db", "jsonl"):
        path = tmp_path / f"session.{kind}"
        opened = SQLiteJournal if kind == "db" else JSONLJournal
        journal = opened(path)
        try:
            anyio.run(converse, journal, Budget(max_tool_calls=10), script, [False], [True])
        finally:
            journal.close()
        reading = opened(path)
        try:
            assert isinstance(replay(reading, "s"), Session)
        finally:
            reading.close()
