"""Secrets: any 8 characters in a row of the key, not only its start, are masked wherever text
leaves toolreel — the CLI's stderr and stdout, the journal, an export, `show`, the UI stream,
OpenTelemetry span statuses, and DEBUG logs, toolreel's and httpx's/httpcore's — also when
the echo is split across two stream pieces.

A scripted server on 127.0.0.1 plays a careless provider: its errors quote the key's last 18
characters (`...ABCDEFGH1234567890`, never its start), every response carries a header
echoing them (which httpcore's DEBUG log prints), and its answers stream a piece of the
key's middle cut in two, so that neither piece holds 8 of its characters.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx2
import pytest
from click.testing import CliRunner

from toolreel.adapters import load_session, render_transcript
from toolreel.cli import cli
from toolreel.core import Finish
from toolreel.core.notices import TextStreamed
from toolreel.core.policies import RetryPolicy
from toolreel.shell import AgentOptions, Client, export_session, open_journal, tool
from toolreel.shell.scripted import Reply, ScriptedServer, http_error, tool_calls
from toolreel.web import app

KEY = "sk-proj-Zq8vN3xR7tLw2Yp5Kd9Hs4ABCDEFGH1234567890"
PUBLIC = len("sk-proj-")
TAIL = KEY[-18:]  # how the server quotes the key: by its end
MIDDLE = KEY[12:24]  # what the answers and the tool quote: 12 characters from its middle
#: Every run of 8 characters of the key that goes past its public prefix: none may leak.
WINDOWS = [KEY[i : i + 8] for i in range(PUBLIC - 7, len(KEY) - 7)]
FAST = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.001)
ECHO = (("x-echo-key", f"...{TAIL}"),)


def assert_clean(name: str, data: str | bytes) -> None:
    """No 8 characters in a row of the key (past its public prefix) are in `data`."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    leaked = [window for window in WINDOWS if window in text]
    assert not leaked, f"{name} holds {leaked[0]!r}"


def split_answer(text: str) -> Reply:
    """A streamed answer `text` (which holds MIDDLE) whose chunks cut MIDDLE in two halves."""
    cut = text.index(MIDDLE) + len(MIDDLE) // 2
    return attrs.evolve(Reply(text=text, chunk_size=cut), headers=ECHO)


def echoing_error(status: int) -> Reply:
    """An error quoting the key's end, with the echo header."""
    return attrs.evolve(http_error(status, f"Incorrect API key provided: ...{TAIL}"), headers=ECHO)


def calling_leak() -> Reply:
    """A call of `leak` whose arguments quote MIDDLE (cut in two as well)."""
    reply = tool_calls(("call_1", "leak", {"note": MIDDLE}))
    arguments = reply.calls[0][2]
    return attrs.evolve(reply, chunk_size=arguments.index(MIDDLE) + len(MIDDLE) // 2, headers=ECHO)


@tool
def leak(note: str) -> str:
    """A careless tool that prints the end of the process's key."""
    return f"noted; the key in use ends {KEY[-10:]}"


def test_the_pieces_of_the_script_really_split_the_echoes() -> None:
    reply = split_answer(f"Your key holds {MIDDLE}, keep it.")
    chunks = [
        reply.text[i : i + reply.chunk_size] for i in range(0, len(reply.text), reply.chunk_size)
    ]
    assert all(not any(w in chunk for w in WINDOWS) for chunk in chunks)
    assert any(w in reply.text for w in WINDOWS)
    assert TAIL[:12] != KEY[:12] and KEY[:12] not in TAIL  # no echo starts like the key


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """An error quoting the key's end (retried), a leaking tool call, a split echo; then a 401."""
    script = [
        echoing_error(500),
        calling_leak(),
        split_answer(f"Your key holds {MIDDLE}, keep it."),
        echoing_error(401),
        echoing_error(401),
    ]
    with ScriptedServer(script) as scripted:
        yield scripted


def options(server: ScriptedServer, **extra: Any) -> AgentOptions:
    """The options of a session against `server` with KEY."""
    return AgentOptions(
        model="m",
        base_url=server.url,
        api_key=KEY,
        tools=[leak],
        auto_execute_tools=True,
        retry=FAST,
        **extra,
    )


async def one_turn(opts: AgentOptions) -> tuple[str, list[str], str]:
    """A turn through a Client: its session id, the text it streamed, its answer."""
    async with Client(opts) as client:
        await client.query("hi")
        notices = [notice async for notice in client.events()]
    finish = notices[-1]
    assert isinstance(finish, Finish)
    streamed = [n.text for n in notices if isinstance(n, TextStreamed)]
    return client.session_id, streamed, finish.text or ""


@pytest.mark.parametrize("suffix", [".db", ".jsonl"])
def test_an_echo_of_the_keys_end_or_middle_is_in_no_artefact_of_a_session(
    suffix: str,
    server: ScriptedServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    journal = tmp_path / f"sessions{suffix}"
    sid, streamed, answer = anyio.run(one_turn, options(server, journal=str(journal)))
    assert answer == "Your key holds ***, keep it."
    assert "".join(streamed) == answer

    artefacts: dict[str, str | bytes] = {"notices": repr(streamed)}
    for path in tmp_path.glob("sessions*"):
        artefacts[path.name] = path.read_bytes()
    store = open_journal(journal)
    try:
        export_session(store, sid, tmp_path / "export.jsonl")
        transcript = render_transcript(load_session(store, sid), expand=True, ids=True)
    finally:
        store.close()
    artefacts["export"] = (tmp_path / "export.jsonl").read_bytes()
    artefacts["transcript"] = transcript
    assert "HTTP 500: Incorrect API key provided: ...***" in transcript  # the retried error
    assert "ends ***" in transcript  # the tool's output
    runner = CliRunner()
    for command in (["show", str(journal), sid, "--expand", "--ids"], ["sessions", str(journal)]):
        result = runner.invoke(cli, command, env={"OPENAI_API_KEY": KEY})
        assert result.exit_code == 0, result.output
        artefacts[f"toolreel {command[0]}"] = result.output
    assert "ends ***" in str(artefacts["toolreel show"])
    artefacts["logs"] = caplog.text + "".join(repr(r.__dict__) for r in caplog.records)
    for name, data in artefacts.items():
        assert_clean(name, data)


def test_the_cli_masks_an_echo_of_the_keys_end_on_stderr_and_a_split_one_on_stdout(
    server: ScriptedServer,
) -> None:
    runner = CliRunner()
    env = {"OPENAI_API_KEY": KEY}
    args = ["run", "hi", "--base-url", server.url, "--model", "m"]
    answered = runner.invoke(cli, [*args, "--tools", f"{__name__}:leak"], env=env)
    assert answered.exit_code == 0, answered.output
    assert "Your key holds ***, keep it." in answered.stdout
    failed = runner.invoke(cli, args, env=env)  # the script's fatal 401
    assert failed.exit_code == 1
    assert "error: HTTP 401: Incorrect API key provided: ...***" in failed.stderr
    for name, result in {"answered": answered, "failed": failed}.items():
        assert_clean(f"{name}: stdout", result.stdout)
        assert_clean(f"{name}: stderr", result.stderr)


def post(web: Any, path: str, body: dict[str, Any]) -> str:
    """One POST to the ASGI app; the response's text."""

    async def send() -> str:
        transport = httpx2.ASGITransport(app=web)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.post(path, json=body)
            assert response.status_code == 200, response.text
            return response.text

    return anyio.run(send)


def chat(text: str, chat_id: str) -> dict[str, Any]:
    """The body the AI SDK's chat transport posts for a new user message."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat_id, "messages": [user], "trigger": "submit-message", "messageId": None}


def test_the_ui_stream_masks_split_echoes_tool_outputs_and_errors(server: ScriptedServer) -> None:
    web = app(options(server))
    answered = post(web, "/api/chat", chat("hi", "chat-1"))
    parts = [json.loads(e.removeprefix("data: ")) for e in answered.split("\n\n")[:-2] if e]
    text = "".join(p["delta"] for p in parts if p["type"] == "text-delta")
    assert text == "Your key holds ***, keep it."
    outputs = [p["output"] for p in parts if p["type"] == "tool-output-available"]
    assert outputs == ["noted; the key in use ends ***"]
    failed = post(web, "/api/chat", chat("again", "chat-2"))  # the fatal 401
    assert "Incorrect API key provided: ...***" in failed
    events = post(web, "/api/events", {"message": "once more", "id": "s-3"})
    assert "Incorrect API key provided: ...***" in events
    for name, data in {"answered": answered, "failed": failed, "events": events}.items():
        assert_clean(name, data)


def test_otel_span_statuses_mask_an_echo_of_the_keys_end(server: ScriptedServer) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="OpenTelemetry is not installed")
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: PLC0415
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: PLC0415
        InMemorySpanExporter,
    )

    from toolreel import otel  # noqa: PLC0415

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(tracer_provider=provider)
    try:
        anyio.run(one_turn, options(server))  # a retried 500, then the answer
        anyio.run(one_turn, options(server))  # a fatal 401: the turn fails
    finally:
        otel.uninstrument()
    spans = exporter.get_finished_spans()
    statuses = [span.status.description or "" for span in spans]
    assert any("Incorrect API key provided: ...***" in status for status in statuses)
    for span in spans:
        assert_clean(
            f"span {span.name}", repr((span.status.description, dict(span.attributes or {})))
        )
        for event in span.events:
            assert_clean(f"span {span.name} event", repr(dict(event.attributes or {})))


def test_httpcore_debug_logs_mask_a_header_echoing_the_keys_end(
    server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    anyio.run(one_turn, options(server))
    headers = [
        r
        for r in caplog.records
        if r.name.startswith("httpcore") and "x-echo-key" in r.getMessage()
    ]
    assert headers, "httpcore2 logged no response headers"
    assert all("x-echo-key', b'...***'" in record.getMessage() for record in headers)
    assert any(r.name == "httpx2" for r in caplog.records)
    assert_clean("logs", caplog.text + "".join(repr(r.__dict__) for r in caplog.records))
