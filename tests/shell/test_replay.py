"""Replay, offline re-execution, export/import and transcripts of recorded sessions."""

from __future__ import annotations

import json
from typing import Any

import anyio
import attrs
import httpx
import httpx2
import pytest

from toolreel.adapters import (
    JSONLJournal,
    MemoryJournal,
    SQLiteJournal,
    load_session,
    render_transcript,
)
from toolreel.adapters import Step as JournalStep
from toolreel.core import (
    HookDecided,
    LoopConfig,
    ModelResponded,
    PromptSubmitted,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolSpec,
    initial_state,
    step,
)
from toolreel.core.hooks import Allowed, HookPoint
from toolreel.core.outcomes import FinishReason
from toolreel.core.policies import RetryPolicy
from toolreel.shell import (
    AgentOptions,
    Client,
    Divergence,
    Recording,
    export_session,
    import_session,
    replay,
    tool,
    verify,
)
from toolreel.shell.errors import JournalUnavailable, ReplayDiverged, RequestMismatch, SessionError
from toolreel.shell.hooks import HOOK_PRE_TOOL_USE, HookDecision
from toolreel.shell.scripted import Reply, ScriptedServer, cut_off, http_error, text, tool_calls
from toolreel.testing import NetworkBlocked, ScriptedModel
from toolreel.testing._guard import guard_network

FAST = RetryPolicy(max_retries=2, base_delay=0.0, max_delay=0.0)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


def gate(event):
    """Block calls of `divide`."""
    if event.tool_name == "divide":
        return HookDecision(continue_=False, reason="no dividing")
    return None


SCENARIOS = {
    "successful tool": ([tool_calls(("c1", "add", {"a": 1, "b": 2})), text("3")], {}),
    "tool exception": ([tool_calls(("c1", "divide", {"a": 1, "b": 0})), text("undefined")], {}),
    "unknown tool": ([tool_calls(("c1", "nope", {})), text("sorry")], {}),
    "max iterations": (
        [tool_calls((f"c{i}", "add", {"a": i, "b": 1})) for i in range(5)],
        {"max_tool_iterations": 3},
    ),
    "hook block": (
        [tool_calls(("c1", "divide", {"a": 1, "b": 2})), text("blocked")],
        {"hooks": {HOOK_PRE_TOOL_USE: [gate]}},
    ),
    "parallel tools": (
        [
            tool_calls(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4})),
            text("3 and 7"),
        ],
        {},
    ),
    "429 then success": ([http_error(429, "slow down", retry_after=0), text("hi")], {}),
    "stream cut then success": ([cut_off(text("a long answer"), 2), text("whole")], {}),
    "fatal error": ([http_error(401, "bad key")], {}),
}


def record(replies: list[Reply], journal, session_id: str = "s", **extra) -> None:
    """Run one prompt against the scripted server, journaled."""
    with ScriptedServer(replies) as server:
        options = AgentOptions(
            model="m",
            base_url=server.url,
            api_key="sk-test",
            tools=[add, divide],
            auto_execute_tools=True,
            retry=FAST,
            journal=journal,
            session_id=session_id,
            **extra,
        )

        async def main() -> None:
            async with Client(options) as client:
                await client.query("go")
                await client.wait()

        anyio.run(main)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_recorded_scenario_replays_identically(name: str) -> None:
    replies, extra = SCENARIOS[name]
    journal = MemoryJournal()
    record(replies, journal, **extra)
    session = replay(journal, "s")
    assert not isinstance(session, Divergence), str(session)
    assert session.events == len(list(journal.entries("s")))
    assert len(session.turns) == 1 and session.turns[0].reason is not None


def test_a_changed_tool_description_diverges_at_the_first_model_call() -> None:
    journal = MemoryJournal()
    record(SCENARIOS["successful tool"][0], journal)
    config = journal.config("s")
    changed = attrs.evolve(
        config,
        tools=tuple(
            attrs.evolve(t, description="Sum.") if t.name == "add" else t for t in config.tools
        ),
    )
    divergence = replay(journal, "s", config=changed)
    assert isinstance(divergence, Divergence)
    assert divergence.seq == 1  # the prompt's step carries the first CallModel
    assert "tool 'add' description:\n  -Add two integers.\n  +Sum." in divergence.diff
    with pytest.raises(ReplayDiverged, match="diverges at step 1"):
        verify(journal, "s", config=changed)


def test_a_changed_prompt_or_limit_diverges_where_it_first_matters() -> None:
    journal = MemoryJournal()
    record(SCENARIOS["max iterations"][0], journal, max_tool_iterations=3)
    entries = list(journal.entries("s"))
    config = journal.config("s")
    prompt = replay(journal, "s", config=attrs.evolve(config, system_prompt="Be brief."))
    assert isinstance(prompt, Divergence) and prompt.seq == 1
    # With a cap of 2, the loop stops after the second round instead of calling again.
    capped = replay(journal, "s", config=attrs.evolve(config, max_iterations=2))
    assert isinstance(capped, Divergence)
    second_round_done = [e.seq for e in entries if e.event.__class__.__name__ == "ToolFinished"][1]
    assert capped.seq == second_round_done


def test_offline_rerun_of_a_10_round_session_with_2_parallel_tools_per_round(tmp_path) -> None:
    def model(request: dict) -> Reply:
        done = [m for m in request["messages"] if m["role"] == "tool"]
        n = len(done) // 2
        if n < 10:
            return tool_calls(
                (f"r{n}a", "add", {"a": n, "b": 1}), (f"r{n}b", "add", {"a": n, "b": 2})
            )
        return text("total " + str(sum(int(m["content"]) for m in done)))

    path = tmp_path / "rec.db"
    with ScriptedServer(model) as server:
        options = AgentOptions(
            model="m",
            base_url=server.url,
            api_key="k",
            tools=[add],
            auto_execute_tools=True,
            max_tool_iterations=20,
            journal=str(path),
            session_id="ten",
        )

        async def main():
            async with Client(options) as client:
                await client.query("ten rounds")
                await client.wait()
                return client.history

        recorded_history = anyio.run(main)
    exported = export_session(SQLiteJournal(path), "ten", tmp_path / "ten.jsonl")

    calls = []

    @tool("add", "Add two integers.")
    def counting_add(a: int, b: int) -> int:
        """The program under test's own tool, counting its runs."""
        calls.append((a, b))
        return a + b

    recording = Recording.from_file(exported)
    offline = AgentOptions(
        model="m",
        base_url="http://127.0.0.1:9/v1",
        tools=[counting_add],
        auto_execute_tools=True,
        max_tool_iterations=20,
    )
    reasons = anyio.run(recording.rerun, offline)
    assert reasons == [FinishReason.COMPLETED]
    assert recording.history == recorded_history
    assert len(recording.history[-1].tool_rounds) == 10
    assert calls == []  # the recorded outputs answered; nothing ran, nothing was sent

    changed = Recording.from_file(exported)
    with pytest.raises(RequestMismatch, match="model call 1 differs") as mismatch:
        anyio.run(changed.rerun, attrs.evolve(offline, system_prompt="You are terse."))
    assert "system prompt added:\n  + You are terse." in str(mismatch.value)


@pytest.mark.parametrize("kind", ["db", "jsonl"])
def test_export_then_import_round_trips_and_still_replays(tmp_path, kind: str) -> None:
    source = (
        SQLiteJournal(tmp_path / "a.db") if kind == "db" else JSONLJournal(tmp_path / "a.jsonl")
    )
    record(SCENARIOS["parallel tools"][0], source, session_id="p")
    out = export_session(source, "p", tmp_path / "p.jsonl")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["kind"] == "config" and {line["session"] for line in lines} == {"p"}
    target = SQLiteJournal(tmp_path / "b.db")
    assert import_session(out, target) == "p"
    assert list(target.entries("p")) == list(source.entries("p"))
    assert not isinstance(replay(target, "p"), Divergence)
    with pytest.raises(SessionError, match=r"session 'p' already exists in .*b.db"):
        import_session(out, target)
    with pytest.raises(JournalUnavailable, match="exists; export writes a new file"):
        export_session(source, "p", out)


def test_the_transcript_is_stable_and_complete() -> None:
    journal = MemoryJournal()
    record(SCENARIOS["tool exception"][0], journal)
    session = load_session(journal, "s")
    first = render_transcript(session)
    assert first == render_transcript(load_session(journal, "s"))
    assert "**User:** go" in first
    assert "→ divide" in first and '"b": 0' in first
    assert "← error:" in first and "ZeroDivisionError" in first
    assert "**Assistant:** undefined" in first
    assert "_completed · 2 iterations · 20 in / 10 out tokens_" in first
    assert "c1" not in first  # no run-specific ids unless asked
    assert "[c1]" in render_transcript(session, ids=True)
    assert "▸ 1 tool round: divide" in render_transcript(session, expand=False)


def test_a_transcript_counts_in_the_singular_for_one() -> None:
    journal = MemoryJournal()
    record([text("hello")], journal)
    shown = render_transcript(load_session(journal, "s"))
    assert "_completed · 1 iteration · 10 in / 5 out tokens_" in shown
    assert "1 iterations" not in shown and shown.endswith("Total: 1 turn · 10 in / 5 out tokens\n")


def test_transcript_snapshot_extension_round_trips(transcript_snapshot) -> None:
    journal = MemoryJournal()
    record(SCENARIOS["parallel tools"][0], journal)
    session = load_session(journal, "s")
    assert session == transcript_snapshot


@pytest.mark.parametrize("library", [httpx2, httpx], ids=["httpx2", "httpx"])
def test_the_network_guard_refuses_real_provider_calls(library: Any) -> None:
    with guard_network() as blocked:
        with pytest.raises(NetworkBlocked, match=r"api\.openai\.com"):
            library.get("https://api.openai.com/v1/models")
        with ScriptedServer([text("local is fine")]) as server:
            assert library.post(f"{server.url}/chat/completions", json={}).status_code == 200
    assert blocked == ["https://api.openai.com/v1/models"]


def test_the_offline_marker_fails_a_test_that_reaches_a_provider(pytester) -> None:
    pytester.makepyfile(
        """
        import anyio, pytest
        from toolreel.shell import AgentOptions, run
        from toolreel.shell.errors import RunFailed

        @pytest.mark.toolreel_offline
        def test_calls_openai():
            options = AgentOptions(model="gpt-4o-mini", api_key="sk-test")
            with pytest.raises(RunFailed):  # the program under test swallows the error...
                anyio.run(run, "hi", options)
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)  # ...the guard still fails the test loudly
    result.stdout.fnmatch_lines(["*real provider call(s) during the test*api.openai.com*"])


def test_scripted_model_fixture_in_process_and_over_http(scripted_model) -> None:
    for http in (True, False):
        scripted: ScriptedModel = scripted_model(
            [tool_calls(("c1", "add", {"a": 2, "b": 3})), text("5")], http=http
        )
        options = scripted.options(tools=[add], auto_execute_tools=True)

        async def main(options=options, scripted=scripted):
            async with Client(options, model=scripted.model) as client:
                await client.query("2+3")
                return await client.wait()

        finish = anyio.run(main)
        assert finish.text == "5"
        assert finish.rounds[0].results[0].content == "5"
        assert len(scripted.requests) == 2


def test_recorded_session_fixture_reads_an_exported_file(tmp_path, recorded_session) -> None:
    journal = MemoryJournal()
    record(SCENARIOS["successful tool"][0], journal)
    path = export_session(journal, "s", tmp_path / "s.jsonl")
    recording = recorded_session(path)
    assert recording.prompts == ["go"]
    assert len(recording.calls) == 2
    with pytest.raises(JournalUnavailable, match="no recording at"):
        recorded_session(tmp_path / "missing.jsonl")


def test_hook_points_are_recorded_in_the_config() -> None:
    journal = MemoryJournal()
    record(SCENARIOS["hook block"][0], journal, hooks={HOOK_PRE_TOOL_USE: [gate]})
    assert journal.config("s").hooks == frozenset({HookPoint.PRE_TOOL_USE})
    assert journal.config("s").tools[0] == ToolSpec(
        name="add", description="Add two integers.", parameters=add.spec.parameters
    )


def _manual_session(path, output: str) -> None:
    """A manual-mode session (one call answered by the caller) journaled in `path`."""
    config = LoopConfig(model="m", tools=(ToolSpec(name="add", description="Add"),))
    config = attrs.evolve(config, auto_execute=False)
    events = [
        PromptSubmitted(text="add"),
        ToolCallStarted(index=0, call_id="c1", name="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a": 1}'),
        ModelResponded(finish_reason="tool_calls"),
        ToolFinished(call_id="c1", output=output),
        TextDelta(text="done"),
        ModelResponded(),
    ]
    journal = JSONLJournal(path)
    journal.begin("s", config)
    state, steps = initial_state(config), []
    for seq, event in enumerate(events, start=1):
        state, effects = step(state, event)
        steps.append(JournalStep(seq=seq, event=event, effects=effects))
    journal.append("s", steps)
    journal.close()


def _as_old_journal(path) -> None:
    """Rewrite the caller's result as journals before the merge stored it: `ToolResultAdded`."""
    lines = []
    for raw in path.read_text().splitlines():
        line = json.loads(raw)
        if line.get("event", {}).get("type") == "ToolFinished":
            event = line["event"]
            line["event"] = {
                "type": "ToolResultAdded",
                "call_id": event["call_id"],
                "content": event["output"],
                "is_error": event["is_error"],
            }
            del line["digest"]  # a hand-written line carries no checksum
        if "effects" in line and line["effects"] != (old := _old_effects(line["effects"])):
            line["effects"] = old
            line.pop("digest", None)
        lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n")


def _old_effects(effects: list[dict]) -> list[dict]:
    """Effects as older journals stored them: the flat `Finish`, and each `Persist` told twice."""
    old = []
    for effect in effects:
        old.append(_old_finish(effect) if effect["type"] == "Finish" else effect)
        if effect["type"] == "Persist":
            told = {"type": "MessageRecorded", "message_digest": "5f1c0ffee0ddba11"}
            old.append({"type": "Emit", "notice": told})
    return old


def _old_finish(effect: dict) -> dict:
    """A completed turn's `Finish` as journals stored it before the outcome union."""
    return {
        "type": "Finish",
        "reason": "completed",
        "text": effect["outcome"]["text"],
        "iterations": effect["iterations"],
        "usage": effect["usage"],
        "max_iterations_reached": False,
        "error": None,
        "model_finish_reason": "stop",
        "block_reason": None,
        "rounds_count": effect["rounds_count"],
        "rounds_digest": effect["rounds_digest"],
    }


def test_a_journal_in_the_old_shapes_still_reads_and_replays(tmp_path) -> None:
    path = tmp_path / "old.jsonl"
    long_output = "7" * 2000  # kept once, in the event: the messages need it back
    _manual_session(path, long_output)
    _as_old_journal(path)
    assert '"type": "ToolResultAdded"' in path.read_text()
    assert '"reason": "completed"' in path.read_text()
    assert '"type": "MessageRecorded"' in path.read_text()
    journal = JSONLJournal(path)
    [answered] = [e.event for e in journal.entries("s") if isinstance(e.event, ToolFinished)]
    assert answered == ToolFinished(call_id="c1", output=long_output)
    session = verify(journal, "s")
    assert session.turns[-1].reason is FinishReason.COMPLETED
    loaded = load_session(journal, "s")
    assert loaded.history[-1].tool_rounds[0].results[0].content == long_output
    journal.close()


def _hooked_session(path) -> None:
    """A session with PreToolUse and PostToolUse hooks (a long result) journaled in `path`."""
    hooks = frozenset({HookPoint.PRE_TOOL_USE, HookPoint.POST_TOOL_USE})
    config = LoopConfig(model="m", tools=(ToolSpec(name="add", description="Add"),), hooks=hooks)
    events = [
        PromptSubmitted(text="add"),
        ToolCallStarted(index=0, call_id="c1", name="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a": 1}'),
        ModelResponded(finish_reason="tool_calls"),
        HookDecided(hook_id="pre:c1", decision=Allowed()),
        ToolFinished(call_id="c1", output="7" * 2000),
        TextDelta(text="done"),
        ModelResponded(),
    ]
    journal = JSONLJournal(path)
    journal.begin("s", config)
    state, steps = initial_state(config), []
    for seq, event in enumerate(events, start=1):
        state, effects = step(state, event)
        steps.append(JournalStep(seq=seq, event=event, effects=effects))
    journal.append("s", steps)
    journal.close()


def _as_asked(effect: dict) -> dict:
    """A hook effect as journals stored it before `TellHook`: every hook asked, with a `result`."""
    if effect["type"] == "AskHook":
        return {**effect, "result": None}
    if effect["type"] == "TellHook":
        call_id = effect["call"]["id"]
        told = {"hook_id": f"post:{call_id}", "point": "PostToolUse", "prompt": None}
        return {"type": "AskHook", **told, "call": effect["call"], "result": effect["result"]}
    return effect


def test_a_journal_that_asked_post_tool_use_still_replays(tmp_path) -> None:
    path = tmp_path / "old.jsonl"
    _hooked_session(path)
    lines = []
    for raw in path.read_text().splitlines():
        line = json.loads(raw)
        if "effects" in line and line["effects"] != (
            old := [_as_asked(e) for e in line["effects"]]
        ):
            line["effects"] = old
            line.pop("digest", None)  # a hand-written line carries no checksum
        lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n")
    assert '"point": "PostToolUse"' in path.read_text()
    journal = JSONLJournal(path)
    session = verify(journal, "s")
    assert session.turns[-1].reason is FinishReason.COMPLETED
    journal.close()
