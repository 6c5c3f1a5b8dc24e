"""Secrets: a key with a trailing newline works, a mangled key is refused without being shown,
and a key a server echoes back never reaches the journal, an export, a transcript, the CLI's
output, the logs, a repr or an exception (tests/faults/fault_server.py plays the server)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from click.testing import CliRunner
from fault_server import FaultServer, answer, echo_error

from toolreel.adapters import EventModel, http_model, load_session, render_transcript
from toolreel.cli import cli
from toolreel.core import ConfigError, ModelCallFailed, ModelResponded, TextDelta
from toolreel.core.notices import RetryScheduled
from toolreel.core.policies import RetryPolicy
from toolreel.shell import (
    AgentDefinition,
    AgentFailure,
    AgentOptions,
    Client,
    OutputTool,
    execute_agent,
    export_session,
    open_journal,
    run,
    tool,
)
from toolreel.shell.errors import RunFailed

KEY = "sk-proj-Zq8vN3xR7tLw2Yp5Kd9Hs4Bm6Jc1Fg0"
RAW_KEY = KEY + "\n"  # as read from a file
PREFIX = KEY[:12]
FAST_RETRY = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05)


@attrs.frozen
class Verdict:
    """An agent's output."""

    ok: bool


@tool
def leak() -> str:
    """A careless tool that prints the process's key."""
    return f"token in use: {KEY}; short form {KEY[:20]}..."


def script() -> list[Any]:
    """An error echoing the key (retryable), a call of the leaking tool, then the answer."""
    return [echo_error(500), answer(calls=[("call_1", "leak", {})]), answer("all done")]


def assert_clean(name: str, data: str | bytes) -> None:
    """Neither the key nor its 12-character prefix is in `data`."""
    blob = data.encode() if isinstance(data, str) else data
    assert PREFIX.encode() not in blob, f"the key leaked into {name}"


async def session(
    opts: AgentOptions, files: dict[str, str | bytes]
) -> tuple[Client, list[RetryScheduled], str]:
    """One turn through a Client; the client, its retries and its text.

    The journal's files are read into `files` while it is still open (a WAL then holds data).
    """
    async with Client(opts) as client:
        await client.query("hi")
        notices = [notice async for notice in client.events()]
        assert opts.journal is not None
        for path in Path(str(opts.journal)).parent.glob("sessions*"):
            files[f"open {path.name}"] = path.read_bytes()
    assert client.last_finish is not None
    return client, [n for n in notices if isinstance(n, RetryScheduled)], client.last_finish.text


@pytest.mark.parametrize("suffix", [".db", ".jsonl"])
@pytest.mark.parametrize("source", ["option", "environment"])
def test_a_key_echoed_by_the_server_is_in_no_artefact(
    suffix: str,
    source: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", RAW_KEY)
    journal = tmp_path / f"sessions{suffix}"
    artefacts: dict[str, str | bytes] = {}
    with FaultServer([*script(), echo_error(401)]) as server:
        opts = AgentOptions(
            model="m",
            base_url=server.url,
            api_key=RAW_KEY if source == "option" else None,
            tools=[leak],
            auto_execute_tools=True,
            journal=str(journal),
            retry=FAST_RETRY,
        )
        client, retries, text = anyio.run(session, opts, artefacts)
        assert text == "all done"
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # stripped
        assert retries and retries[0].message.startswith("HTTP 500: Incorrect API key provided")
        with pytest.raises(RunFailed) as failed:  # the last reply: a fatal echo
            anyio.run(run, "again", opts)
        artefacts |= {"exception": str(failed.value), "exception repr": repr(failed.value)}
        artefacts |= {"retry notices": repr(retries), "history": repr(client.history)}
        model = http_model("openai", base_url=server.url)
        artefacts |= {"reprs": repr((opts, client, client.redactor, model))}
        artefacts |= cli_outputs(journal, client.session_id, tmp_path, server.url)

    exported = tmp_path / "export.jsonl"
    store = open_journal(journal)
    try:
        export_session(store, client.session_id, exported)
        artefacts["transcript"] = render_transcript(
            load_session(store, client.session_id), expand=True, ids=True
        )
    finally:
        store.close()
    artefacts["export"] = exported.read_bytes()
    for path in tmp_path.glob(f"sessions{suffix}*"):  # -wal and -shm included
        artefacts[path.name] = path.read_bytes()
    artefacts["logs"] = caplog.text + "".join(repr(r.__dict__) for r in caplog.records)
    captured = capsys.readouterr()
    artefacts["stdout+stderr"] = captured.out + captured.err
    assert "***" in str(artefacts["transcript"])  # the tool's output was there, masked
    for name, data in artefacts.items():
        assert_clean(name, data)


def cli_outputs(journal: Path, sid: str, tmp_path: Path, url: str) -> dict[str, str | bytes]:
    """What `toolreel` prints, with the key in the environment (as OPENAI_API_KEY)."""
    runner = CliRunner()
    env = {"OPENAI_API_KEY": RAW_KEY}
    out = tmp_path / "cli-export.jsonl"
    commands = {
        "sessions": ["sessions", str(journal)],
        "show": ["show", str(journal), sid, "--expand", "--ids"],
        "export": ["export", str(journal), sid, str(out)],
        "show, a key as the session": ["show", str(journal), KEY],
        "run": ["run", "hi", "--base-url", url, "--model", "m"],  # the server echoes the key
    }
    found: dict[str, str | bytes] = {}
    for name, args in commands.items():
        result = CliRunner.invoke(runner, cli, args, env=env)
        found[f"toolreel {name}"] = result.output + repr(result.exception)
    assert "error:" in str(found["toolreel show, a key as the session"])
    assert "error:" in str(found["toolreel run"])
    found["cli export"] = out.read_bytes()
    return found


def test_a_key_with_whitespace_inside_is_refused_without_being_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mangled = "sk-proj-Zq8vN3xR7tLw 2Yp5Kd9Hs4Bm6Jc1Fg0"
    with pytest.raises(ConfigError) as refused:
        AgentOptions(model="m", api_key=mangled)
    assert (refused.value.field, refused.value.value) == ("api_key", "***")
    assert "Zq8vN3" not in str(refused.value)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-Zq8vN3xR7tLw\x072Yp5Kd9H")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY") as refused:
        Client(AgentOptions(model="m"))
    assert "Zq8vN3" not in str(refused.value)

    result = CliRunner().invoke(cli, ["run", "hi", "--model", "m", "--api-key", mangled])
    assert result.exit_code == 2
    assert "api_key='***'" in result.output and "Zq8vN3" not in result.output


def test_log_records_of_toolreel_loggers_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    http_model("openai", key=KEY, base_url="http://127.0.0.1:9/v1")  # registers the key
    caplog.set_level(logging.DEBUG)
    logging.getLogger("toolreel").warning("server said %s", f"bad key {KEY[:15]}...")
    try:
        raise ValueError(KEY)
    except ValueError:
        logging.getLogger("toolreel").exception("failed")
    assert "server said bad key ***..." in caplog.text
    assert_clean("logs", caplog.text)


def test_structured_output_agents_redact_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", RAW_KEY)
    model = EventModel(lambda request: [ModelCallFailed(retryable=False, message=f"no {KEY}")])
    definition = AgentDefinition(
        build_prompt=lambda text: text, output=OutputTool.of(Verdict, name="verdict")
    )
    result = anyio.run(
        lambda: execute_agent(definition, "hi", AgentOptions(model="m"), model=model)
    )
    assert isinstance(result, AgentFailure)
    assert "no ***" in result.error.message
    assert_clean("agent failure", repr(result))


def test_what_a_callback_raised_is_recorded_masked() -> None:
    def leaky(finish: object) -> None:
        raise RuntimeError(f"could not log in with {KEY}")

    model = EventModel(lambda request: [TextDelta(text="hi"), ModelResponded()])
    options = AgentOptions(model="m", api_key=KEY, on_finish=leaky)

    async def main() -> list[str]:
        async with Client(options, model=model) as client:
            await client.query("hello")
            await client.wait()
            return list(client.metadata.callback_errors)

    [error] = anyio.run(main)
    assert "could not log in with ***" in error
    assert_clean("callback errors", error)
