"""Prompt caching over HTTP: Anthropic's `cache_control` breakpoints, OpenAI's `prompt_cache_key`.

A multi-turn session with tools against a scripted Anthropic Messages server on
127.0.0.1: every request is checked for where its breakpoints are, in the shapes of
Anthropic's prompt-caching documentation (the system prompt as a text block with
`cache_control`, `cache_control` on the last tool definition and on a message's last
content block; at most 4 a request), and the cache counters it answers with are
counted in the turn's usage and cost. Then OpenAI's key: sent (the session id) to the
hosted API, not to a `base_url` server unless given, and never with caching off.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import attrs
import httpx2
import pytest
from click.testing import CliRunner

from toolreel.adapters import SQLiteJournal
from toolreel.cli import cli
from toolreel.core import Usage
from toolreel.core.budget import Budget
from toolreel.core.policies import RetryPolicy
from toolreel.shell import (
    AgentDefinition,
    AgentFailure,
    AgentOptions,
    AgentRunOptions,
    Client,
    Connection,
    OutputTool,
    execute_agent,
    run,
    tool,
    verify,
)
from toolreel.shell.errors import ConfigError, RunFailed
from toolreel.shell.scripted import ScriptedServer, text
from toolreel.shell.scripted._local import LocalServer, Request

EPHEMERAL = {"type": "ephemeral"}
SYSTEM = "You add numbers. " * 10


@tool("add", "Add two numbers", {"a": int, "b": int})
def add_tool(args: dict) -> dict:
    return {"result": args["a"] + args["b"]}


@tool("neg", "Negate a number", {"a": int})
def neg_tool(args: dict) -> dict:
    return {"result": -args["a"]}


def _frame(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"


def message_stream(block: dict[str, Any], stop: str, usage: dict[str, int]) -> bytes:
    """A Messages SSE stream of one content block."""
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    frames = [
        _frame("message_start", {"message": {"id": "msg_1", "role": "assistant", "usage": usage}}),
        _frame("content_block_start", {"index": 0, "content_block": start}),
        _frame("content_block_delta", {"index": 0, "delta": delta}),
        _frame("content_block_stop", {"index": 0}),
        _frame("message_delta", {"delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}),
        _frame("message_stop", {}),
    ]
    return "".join(frames).encode()


class AnthropicServer:
    """Answers `POST /v1/messages` from a script of content blocks; keeps each request body."""

    def __init__(self, script: list[dict[str, Any]], usage: dict[str, int]) -> None:
        self.script = script
        self.usage = usage
        self.bodies: list[dict[str, Any]] = []
        self._server = LocalServer(self._answer)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    def __enter__(self) -> AnthropicServer:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    async def _answer(self, request: Request, writer: asyncio.StreamWriter) -> bool:
        assert request.path == "/v1/messages"
        self.bodies.append(json.loads(request.body))
        block = self.script[len(self.bodies) - 1]
        stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
        data = message_stream(block, stop, self.usage)
        head = f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len(data)}"
        writer.write(head.encode() + b"\r\n\r\n" + data)
        await writer.drain()
        return True


def call(call_id: str, name: str, **arguments: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def answer(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


#: Two turns of a tool round then an answer: four requests.
SCRIPT = [call("t1", "add", a=1, b=2), answer("3"), call("t2", "neg", a=3), answer("-3")]
#: What the server reports each call used: 100 input tokens read from the cache, 20
#: written to it, 5 not cached.
CACHED = {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}


def options(server: AnthropicServer, **extra: Any) -> AgentOptions:
    return AgentOptions(
        provider="anthropic",
        model="claude-sonnet-4-5",
        base_url=server.url,
        api_key="sk-ant-test",
        system_prompt=SYSTEM,
        tools=[add_tool, neg_tool],
        auto_execute_tools=True,
        **extra,
    )


async def two_turns(opts: AgentOptions) -> list[Any]:
    finishes = []
    async with Client(opts) as client:
        for prompt in ("add 1 and 2", "now negate it"):
            await client.query(prompt)
            finishes.append(await client.wait())
    return finishes


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a request's `cache_control` markers are, as readable paths."""
    found = []
    system = body.get("system")
    if isinstance(system, list):
        found += [f"system[{i}]" for i, b in enumerate(system) if "cache_control" in b]
    found += [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(message["content"]):
            if "cache_control" in block:
                found.append(f"messages[{m}].content[{b}]:{block['type']}")
    return found


def test_auto_caching_marks_tools_system_and_the_growing_conversation() -> None:
    with AnthropicServer(SCRIPT, CACHED) as server:
        first, second = anyio.run(two_turns, options(server))
        bodies = server.bodies
    assert len(bodies) == 4
    # The docs' shapes: the system prompt a text block carrying cache_control ...
    assert bodies[0]["system"] == [{"type": "text", "text": SYSTEM, "cache_control": EPHEMERAL}]
    # ... the last tool definition carrying it (the tools before it are cached with it) ...
    assert [t.get("cache_control") for t in bodies[0]["tools"]] == [None, EPHEMERAL]
    # ... and the last block of the newest user message (and of the one before it).
    assert bodies[0]["messages"][-1]["content"] == [
        {"type": "text", "text": "add 1 and 2", "cache_control": EPHEMERAL}
    ]
    assert [breakpoints(body) for body in bodies] == [
        ["system[0]", "tools[1]", "messages[0].content[0]:text"],
        [
            "system[0]",
            "tools[1]",
            "messages[0].content[0]:text",
            "messages[2].content[0]:tool_result",
        ],
        [
            "system[0]",
            "tools[1]",
            "messages[2].content[0]:tool_result",
            "messages[4].content[0]:text",
        ],
        [
            "system[0]",
            "tools[1]",
            "messages[4].content[0]:text",
            "messages[6].content[0]:tool_result",
        ],
    ]
    # Within the API's limit of 4, and only on blocks the API lets carry one.
    assert all(len(breakpoints(body)) <= 4 for body in bodies)
    # Each call read 100 tokens from the cache and wrote 20: counted, inside the input.
    assert first.usage == Usage(
        input_tokens=250, output_tokens=10, cache_read_tokens=200, cache_write_tokens=40
    )
    assert second.usage.cache_read_tokens == 200


def test_cached_tokens_are_costed_at_the_cache_rates_without_prices() -> None:
    with AnthropicServer(SCRIPT[:2], CACHED) as server:
        result = anyio.run(run, "add 1 and 2", options(server, budget=Budget()))
    # claude-sonnet-4-5 (genai-prices): $3 input, $0.30 cache read, $3.75 cache write, $15 out
    expected = (2 * 5 * 3 + 2 * 100 * 0.3 + 2 * 20 * 3.75 + 2 * 5 * 15) / 1e6
    assert result.spent.cost == pytest.approx(expected)


def test_caching_off_sends_no_breakpoint() -> None:
    with AnthropicServer(SCRIPT, CACHED) as server:
        anyio.run(two_turns, options(server, prompt_cache="off"))
        bodies = server.bodies
    assert [breakpoints(body) for body in bodies] == [[]] * 4
    assert bodies[0]["system"] == SYSTEM  # a plain string, as before caching


def test_breakpoints_placed_by_hand_go_only_where_named() -> None:
    with AnthropicServer(SCRIPT, CACHED) as server:
        anyio.run(two_turns, options(server, prompt_cache=("tools", "system")))
        bodies = server.bodies
    assert [breakpoints(body) for body in bodies] == [["system[0]", "tools[1]"]] * 4


def test_a_prompt_cache_setting_is_checked() -> None:
    with pytest.raises(ConfigError, match="prompt_cache"):
        Connection(provider="anthropic", prompt_cache=("everything",))
    with pytest.raises(ConfigError, match="prompt_cache"):
        Connection(provider="anthropic", prompt_cache="on")


# --- OpenAI: prompt_cache_key ---------------------------------------------------------------


def test_a_base_url_server_gets_no_cache_key_unless_one_is_given() -> None:
    with ScriptedServer([text("hi"), text("hi"), text("hi")]) as server:
        base = {"model": "m", "base_url": server.url, "api_key": "sk-test"}
        anyio.run(run, "hello", AgentOptions(**base))
        anyio.run(run, "hello", AgentOptions(**base, prompt_cache_key="my-app"))
        off = AgentOptions(**base, prompt_cache_key="my-app", prompt_cache="off")
        anyio.run(run, "hello", off)
        keys = [request.get("prompt_cache_key") for request in server.requests]
    assert keys == [None, "my-app", None]


@pytest.mark.parametrize("provider", ["openai", "openai-responses"])
def test_the_hosted_api_gets_the_session_id_as_its_cache_key(provider: str, tmp_path) -> None:
    sent: list[dict[str, Any]] = []
    journal = tmp_path / "keyed.db"

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(500, json={"error": {"message": "stop here"}})

    async def ask(**extra: Any) -> None:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(answer)) as http:
            opts = AgentOptions(
                provider=provider,
                api_key="sk-test",
                http_client=http,
                session_id="session-42",
                retry=RetryPolicy(max_retries=0),
                **extra,
            )
            with pytest.raises(RunFailed):  # the request was all this test wanted
                await run("hello", opts)

    anyio.run(lambda: ask(journal=journal))
    anyio.run(lambda: ask(prompt_cache="off"))
    assert [body.get("prompt_cache_key") for body in sent] == ["session-42", None]
    store = SQLiteJournal(journal)
    try:  # the key is the config's, journaled with the request: the session replays
        assert verify(store, "session-42").config.cache_key == "session-42"
    finally:
        store.close()


def test_show_and_sessions_print_cached_tokens_and_cost(tmp_path) -> None:
    journal = tmp_path / "cached.db"
    with AnthropicServer(SCRIPT, CACHED) as server:
        anyio.run(two_turns, options(server, journal=journal, session_id="cached"))
    shown = CliRunner().invoke(cli, ["show", str(journal), "cached"])
    assert shown.exit_code == 0, shown.output
    # each turn: 2 calls of 125 input tokens (100 read from the cache, 20 written, 5 not)
    turn_cost = (2 * 5 * 3 + 2 * 100 * 0.3 + 2 * 20 * 3.75 + 2 * 5 * 15) / 1e6
    assert (
        f"250 in (200 cached, 40 written to cache) / 10 out tokens · ${turn_cost:.4g}"
        in shown.output
    )
    assert f"500 in (400 cached, 80 written to cache) / 20 out tokens · ${2 * turn_cost:.4g}" in (
        shown.output
    )
    listed = CliRunner().invoke(cli, ["sessions", str(journal)])
    assert listed.exit_code == 0, listed.output
    assert "cost" in listed.output
    assert f"${2 * turn_cost:.4g}" in listed.output
    replayed = CliRunner().invoke(cli, ["replay", str(journal)])  # cache counters journaled
    assert replayed.exit_code == 0, replayed.output
    assert replayed.output.startswith("OK cached")


@attrs.frozen
class Sum:
    total: int


def test_an_agent_run_gives_the_hosted_api_its_own_id_as_the_cache_key() -> None:
    sent: list[dict[str, Any]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(400, json={"error": {"message": "stop here"}})

    definition = AgentDefinition(build_prompt=lambda text: text, output=OutputTool.of(Sum))

    async def ask(**extra: Any) -> None:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(answer)) as http:
            opts = AgentRunOptions(
                connection=Connection(api_key="sk-test", http_client=http), **extra
            )
            result = await execute_agent(definition, "add", opts)
            assert isinstance(result, AgentFailure)

    anyio.run(lambda: ask(session_id="run-7"))
    anyio.run(ask)
    assert sent[0]["prompt_cache_key"] == "run-7"
    assert sent[1]["prompt_cache_key"] not in ("", "run-7")  # a new id of its own
