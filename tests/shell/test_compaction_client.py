"""Compaction end to end: a Client against the scripted OpenAI-compatible server on 127.0.0.1.

Issue 25's "done when": a 200-turn session stays under a 4,000-token budget and replays
exactly — the requests rebuilt from the journal are the requests the server received.
And a provider's "context too long" answer compacts the request and asks once more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import attrs

from toolreel.adapters import OpenAICodec, Session, SQLiteJournal
from toolreel.adapters.replay import fold_journal
from toolreel.core import CallModel, Emit
from toolreel.core.compaction import KeepTokens, KeepTurns, Summarise
from toolreel.core.notices import ContextCompacted
from toolreel.core.outcomes import Completed, Failed
from toolreel.shell import AgentOptions, Client, replay, tool
from toolreel.shell.scripted import Reply, ScriptedServer, http_error, text, tool_calls

TURNS = 200
BUDGET = 4_000


@tool("lookup", "Look a record up by its key", {"key": int})
def lookup(args: dict) -> dict:
    """A record of about 200 characters."""
    return {"record": f"record {args['key']}: " + "r" * 200}


def provider_tokens(body: dict[str, Any]) -> int:
    """The scripted provider's count of a request: one token per four characters of its JSON."""
    return -(-len(json.dumps(body["messages"]) + json.dumps(body.get("tools", []))) // 4)


def looking_up(body: dict[str, Any]) -> Reply:
    """Answer a prompt with a lookup, a lookup's result with a long answer; usage as counted."""
    last = body["messages"][-1]
    if last["role"] == "user":
        number = int(last["content"].split(":")[0].removeprefix("Question "))
        reply = tool_calls((f"c{number}", "lookup", {"key": number}))
    else:
        reply = text("Noted. " + "a" * 200, chunk_size=64)
    return attrs.evolve(reply, usage=(provider_tokens(body), 60))


def options(server: ScriptedServer, journal: Path, **extra: Any) -> AgentOptions:
    """Options for the scripted server, journaled, with the `lookup` tool run."""
    return AgentOptions(
        model="scripted",
        base_url=server.url,
        api_key="sk-test",
        tools=[lookup],
        auto_execute_tools=True,
        journal=journal,
        session_id="long",
        **extra,
    )


async def converse(opts: AgentOptions, prompts: list[str]) -> list[Any]:
    """One Client, one turn per prompt: every turn's Finish."""
    finishes = []
    async with Client(opts) as client:
        for prompt in prompts:
            await client.query(prompt)
            finishes.append(await client.wait())
    return finishes


def test_a_200_turn_session_stays_under_a_4000_token_budget_and_replays_exactly(
    tmp_path: Path,
) -> None:
    journal_path = tmp_path / "long.db"
    prompts = [f"Question {n}: " + "q" * 200 for n in range(1, TURNS + 1)]
    with ScriptedServer(looking_up) as server:
        opts = options(server, journal_path, compaction=KeepTokens(tokens=BUDGET))
        finishes = anyio.run(converse, opts, prompts)
        sent = list(server.requests)
    assert all(isinstance(finish.outcome, Completed) for finish in finishes)
    assert len(sent) == 2 * TURNS
    counts = [provider_tokens(body) for body in sent]
    assert max(counts) <= BUDGET
    assert sum(counts) > 10 * BUDGET  # the whole session would not fit, by far
    last_prompts = [m for m in sent[-1]["messages"] if m["role"] == "user"]
    assert 5 < len(last_prompts) < TURNS

    journal = SQLiteJournal(journal_path)
    try:
        replayed = replay(journal, "long")
        assert isinstance(replayed, Session), str(replayed)
        assert len(replayed.turns) == TURNS
        assert len(replayed.history) == 2 * TURNS  # the history keeps every message
        steps = list(fold_journal(journal, "long"))
    finally:
        journal.close()
    effects = [effect for _, made in steps for effect in made]
    rebuilt = [effect.request for effect in effects if isinstance(effect, CallModel)]
    codec = OpenAICodec()
    assert [codec.messages(request) for request in rebuilt] == [body["messages"] for body in sent]
    told = [e.notice for e in effects if isinstance(e, Emit)]
    assert sum(isinstance(notice, ContextCompacted) for notice in told) > TURNS // 2


#: OpenAI's own answer to a request past the model's context (its documented error shape).
TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your "
        "messages resulted in 8227 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


def refusing_long(body: dict[str, Any]) -> Reply:
    """Refuse a request carrying more than three prompts as too long; else answer."""
    if sum(m["role"] == "user" for m in body["messages"]) > 3:
        return http_error(400, "too long", body=TOO_LONG)
    return text("ok")


def test_a_context_too_long_answer_compacts_and_asks_once_more(tmp_path: Path) -> None:
    prompts = [f"Question {n}: hello" for n in range(1, 5)]
    with ScriptedServer(refusing_long) as server:
        opts = options(server, tmp_path / "s.db", compaction=KeepTurns(turns=100))
        finishes = anyio.run(converse, opts, prompts)
        sent = list(server.requests)
    assert [type(finish.outcome) for finish in finishes] == [Completed] * 4
    carried = [[m["content"] for m in body["messages"] if m["role"] == "user"] for body in sent]
    assert carried[-2:] == [
        [f"Question {n}: hello" for n in range(1, 5)],  # refused
        ["Question 3: hello", "Question 4: hello"],  # the older half left out
    ]
    journal = SQLiteJournal(tmp_path / "s.db")
    try:
        assert isinstance(replay(journal, "long"), Session)
    finally:
        journal.close()


def test_without_a_policy_context_too_long_fails_the_turn(tmp_path: Path) -> None:
    prompts = [f"Question {n}: hello" for n in range(1, 5)]
    with ScriptedServer(refusing_long) as server:
        finishes = anyio.run(converse, options(server, tmp_path / "s.db"), prompts)
        assert len(server.requests) == 4  # no second try
    failed = finishes[-1].outcome
    assert isinstance(failed, Failed)
    assert "maximum context length" in failed.message


def summarising(body: dict[str, Any]) -> Reply:
    """The summary call's answer (asked with the core's own system prompt), else "ok"."""
    if body["messages"][0]["role"] == "system" and "summarise" in body["messages"][0]["content"]:
        return text("The user asked two questions.")
    return text("ok")


def test_summarise_asks_the_model_for_a_summary_and_sends_it_instead(tmp_path: Path) -> None:
    prompts = [f"Question {n}: hello" for n in range(1, 4)]
    policy = Summarise(within=KeepTurns(turns=1), model="cheap")
    with ScriptedServer(summarising) as server:
        opts = options(server, tmp_path / "s.db", compaction=policy, system_prompt="Be brief.")
        finishes = anyio.run(converse, opts, prompts)
        sent = list(server.requests)
    assert [type(finish.outcome) for finish in finishes] == [Completed] * 3
    models = [body["model"] for body in sent]
    assert models == ["scripted", "cheap", "scripted", "cheap", "scripted"]
    last = sent[-1]["messages"]
    assert last[0] == {"role": "system", "content": "Be brief."}
    assert last[1]["content"].endswith("The user asked two questions.")
    assert [m["content"] for m in last[2:]] == ["Question 3: hello"]
    journal = SQLiteJournal(tmp_path / "s.db")
    try:
        assert isinstance(replay(journal, "long"), Session)
    finally:
        journal.close()
