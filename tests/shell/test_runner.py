"""The effect interpreter end to end: parallel tools, timeouts, retries, failures, cancel,
observers, journals — through Client/run against the scripted server on 127.0.0.1."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from toolreel.adapters import (
    JSONLJournal,
    MemoryJournal,
    SQLiteJournal,
    load_session,
    persisted_messages,
)
from toolreel.core import Phase
from toolreel.core._history import unanswered_calls
from toolreel.core.notices import RoundFinished, TextStreamed, ToolCallAnnounced, ToolResultReady
from toolreel.core.outcomes import FinishReason
from toolreel.core.policies import RetryPolicy
from toolreel.shell import AgentOptions, Client, run, tool
from toolreel.shell.errors import RunFailed
from toolreel.shell.scripted import ScriptedServer, cut_off, http_error, text, tool_calls

FAST_RETRY = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05)


def echo(x: str) -> str:
    """Echo."""
    return x


def options(server: ScriptedServer, **extra) -> AgentOptions:
    extra.setdefault("auto_execute_tools", True)
    extra.setdefault("retry", FAST_RETRY)
    return AgentOptions(model="test", base_url=server.url, api_key="sk-test", **extra)


def test_calls_of_a_round_run_concurrently() -> None:
    active = {"now": 0, "max": 0}

    @tool
    async def slow_add(a: int, b: int) -> int:
        """Add slowly."""
        active["now"] += 1
        active["max"] = max(active["max"], active["now"])
        await anyio.sleep(0.05)
        active["now"] -= 1
        return a + b

    calls = [(f"c{i}", "slow_add", {"a": i, "b": 1}) for i in range(4)]
    with ScriptedServer([tool_calls(*calls), text("done")]) as server:
        started = time.perf_counter()
        result = anyio.run(run, "go", options(server, tools=[slow_add]))
        elapsed = time.perf_counter() - started
    assert active["max"] == 4  # the tool itself saw all four in flight
    assert result.text == "done"
    assert [r.content for r in result.rounds[0].results] == ["1", "2", "3", "4"]
    assert (
        elapsed < 1.0
    )  # generous: sequential would still be only 0.2 s; the count above is the proof


def test_sync_tools_run_in_worker_threads_concurrently() -> None:
    seen = set()
    barrier = threading.Barrier(2, timeout=5)

    def blocking(n: int) -> int:
        """Blocks until both calls are running."""
        seen.add(threading.get_ident())
        barrier.wait()
        return n

    with ScriptedServer(
        [tool_calls(("a", "blocking", {"n": 1}), ("b", "blocking", {"n": 2})), text("ok")]
    ) as server:
        result = anyio.run(run, "go", options(server, tools=[tool(blocking)]))
    assert len(seen) == 2
    assert [r.content for r in result.rounds[0].results] == ["1", "2"]


def test_a_tool_that_times_out_is_an_error_result_and_the_loop_goes_on() -> None:
    @tool(timeout=0.05)
    async def stuck() -> str:
        """Never returns in time."""
        await anyio.sleep(10)
        return "late"

    with ScriptedServer([tool_calls(("c1", "stuck", {})), text("gave up")]) as server:
        result = anyio.run(run, "go", options(server, tools=[stuck]))
        [answer] = result.rounds[0].results
        assert answer.is_error and answer.content == "Tool stuck timed out after 0.05 s"
        assert result.text == "gave up"


def test_invalid_arguments_tell_the_model_which_argument_is_wrong() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    script = [
        tool_calls(("c1", "add", {"a": 1, "b": "two"})),
        tool_calls(("c2", "add", {"a": 1, "b": 2})),
        text("3"),
    ]
    with ScriptedServer(script) as server:
        result = anyio.run(run, "go", options(server, tools=[add]))
    first, second = result.rounds
    assert first.results[0].is_error
    assert "argument 'b'" in first.results[0].content and "'two'" in first.results[0].content
    assert second.results[0].content == "3"


def test_retryable_http_error_is_retried_then_succeeds() -> None:
    script = [http_error(429, "Rate limit reached", retry_after=0.01), text("hello")]
    with ScriptedServer(script) as server:
        result = anyio.run(run, "hi", options(server))
        assert result.text == "hello"
        assert len(server.requests) == 2
        assert server.requests[0] == server.requests[1]


def test_a_stream_cut_half_way_is_retried_and_leaves_no_trace() -> None:
    script = [cut_off(text("this will be cut"), after_chunks=2), text("whole answer")]
    with ScriptedServer(script) as server:
        result = anyio.run(run, "hi", options(server))
    assert result.text == "whole answer"
    assert [m.content for m in result.history] == ["hi", "whole answer"]


def test_fatal_http_error_raises_with_the_provider_message() -> None:
    with (
        ScriptedServer([http_error(401, "Incorrect API key provided")]) as server,
        pytest.raises(RunFailed, match="Incorrect API key provided") as failure,
    ):
        anyio.run(run, "hi", options(server))
    assert failure.value.finish.error.status == 401
    assert "sk-test" not in str(failure.value)


def test_unreachable_server_is_retried_then_fails_clearly() -> None:
    opts = AgentOptions(
        model="m", base_url="http://127.0.0.1:9/v1", retry=FAST_RETRY, api_key="sk-secret"
    )
    with pytest.raises(RunFailed, match="retries_exhausted: ConnectError") as failure:
        anyio.run(run, "hi", opts)
    assert "sk-secret" not in str(failure.value)


def test_observer_that_raises_is_recorded_and_the_run_goes_on() -> None:
    def broken(_):
        raise RuntimeError("observer bug")

    with ScriptedServer([tool_calls(("c1", "echo", {"x": "a"})), text("ok")]) as server:
        opts = options(server, tools=[tool(echo)], on_tool_call=broken, on_round=broken)
        result = anyio.run(run, "go", opts)
    assert result.text == "ok"
    assert len(result.callback_errors) == 2
    assert "observer bug" in result.callback_errors[0]


def test_events_stream_text_calls_results_rounds_and_the_finish() -> None:
    with ScriptedServer(
        [tool_calls(("c1", "echo", {"x": "a"}), text="Let me echo."), text("ok")]
    ) as server:

        async def main() -> list:
            async with Client(options(server, tools=[tool(echo)])) as client:
                await client.query("go")
                return [event async for event in client.events()]

        events = anyio.run(main)
    kinds = [type(e).__name__ for e in events]
    assert (
        kinds.index("ToolCallAnnounced")
        < kinds.index("ToolResultReady")
        < kinds.index("RoundFinished")
    )
    assert "".join(e.text for e in events if isinstance(e, TextStreamed)) == "Let me echo.ok"
    assert any(isinstance(e, ToolCallAnnounced) for e in events)
    assert any(isinstance(e, ToolResultReady) for e in events)
    assert any(isinstance(e, RoundFinished) for e in events)
    assert kinds[-1] == "Finish" and events[-1].reason is FinishReason.COMPLETED


def test_interrupt_mid_tool_cancels_promptly_and_keeps_a_valid_history() -> None:
    @tool
    async def forever() -> str:
        """Never ends."""
        await anyio.sleep(60)
        return "never"

    with ScriptedServer([tool_calls(("c1", "forever", {}), ("c2", "echo", {"x": "b"}))]) as server:

        async def main():
            async with Client(options(server, tools=[forever, tool(echo)])) as client:
                await client.query("go")
                async for event in client.events():
                    if isinstance(event, ToolResultReady):  # echo finished; forever still runs
                        started = time.perf_counter()
                        await client.interrupt()
                        return time.perf_counter() - started, client.last_finish, client.history
                raise AssertionError("the turn ended before the tool result")

        elapsed, finish, history = anyio.run(main)
    assert elapsed < 1.0
    assert finish.reason is FinishReason.CANCELLED
    assert unanswered_calls(history) == ()
    results = history[-1].tool_rounds[0].results
    assert [r.content for r in results] == ["Cancelled before the tool finished.", "b"]


def test_cancelling_the_awaiting_task_still_leaves_a_valid_history() -> None:
    journal = MemoryJournal()
    script = [tool_calls(("c1", "echo", {"x": "a"})), tool_calls(("c2", "forever", {})), text("ok")]
    with ScriptedServer(script) as server:

        async def main():
            started = anyio.Event()

            @tool
            async def forever() -> str:
                """Never ends."""
                started.set()
                await anyio.sleep(60)
                return "never"

            opts = options(server, tools=[forever, tool(echo)], journal=journal, session_id="s1")
            with anyio.CancelScope() as outside:  # the app's own scope, around the whole client
                async with Client(opts) as client:
                    await client.query("go")
                    await started.wait()
                    outside.cancel()  # cancels the turn's task too, not only this one
                    await client.wait()
            async with Client(opts) as again:  # the session goes on from the journal
                await again.query("and now?")
                return outside.cancelled_caught, client.last_finish, await again.wait()

        caught, finish, after = anyio.run(main)
        assert caught
        assert finish.reason is FinishReason.CANCELLED
        assert [r.content for r in finish.rounds[-1].results] == [
            "Cancelled before the tool finished."
        ]
        assert after.text == "ok"
        answered = [
            m["tool_call_id"] for m in server.requests[-1]["messages"] if m["role"] == "tool"
        ]
        assert answered == ["c1", "c2"]
    session = load_session(journal, "s1")
    assert [t.reason for t in session.turns] == [FinishReason.CANCELLED, FinishReason.COMPLETED]
    assert unanswered_calls(session.history) == ()


@pytest.mark.parametrize("suffix", [".db", ".jsonl"])
def test_every_step_and_message_is_journaled(tmp_path, suffix: str) -> None:
    path = tmp_path / f"sessions{suffix}"
    with ScriptedServer([tool_calls(("c1", "echo", {"x": "a"})), text("ok")]) as server:
        result = anyio.run(
            run, "go", options(server, tools=[tool(echo)], journal=str(path), session_id="s1")
        )
    journal = SQLiteJournal(path) if suffix == ".db" else JSONLJournal(path)
    entries = list(journal.entries("s1"))
    assert journal.sessions() == ["s1"]
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    assert [m.role for m in persisted_messages(iter(entries))] == ["user", "assistant"]
    assert persisted_messages(iter(entries))[-1].tool_rounds == result.rounds
    journal.close()


def test_a_cap_on_concurrent_tools_is_respected() -> None:
    active = {"now": 0, "max": 0}

    @tool
    async def slow(n: int) -> int:
        """Slow identity."""
        active["now"] += 1
        active["max"] = max(active["max"], active["now"])
        await anyio.sleep(0.02)
        active["now"] -= 1
        return n

    calls = [(f"c{i}", "slow", {"n": i}) for i in range(5)]
    with ScriptedServer([tool_calls(*calls), text("done")]) as server:
        result = anyio.run(run, "go", options(server, tools=[slow], max_concurrent_tools=2))
    assert active["max"] == 2
    assert [r.content for r in result.rounds[0].results] == ["0", "1", "2", "3", "4"]


def test_the_global_tool_timeout_applies_to_tools_without_their_own() -> None:
    @tool
    async def stuck() -> str:
        """Never returns in time."""
        await anyio.sleep(10)
        return "late"

    with ScriptedServer([tool_calls(("c1", "stuck", {})), text("ok")]) as server:
        result = anyio.run(run, "go", options(server, tools=[stuck], tool_timeout=0.05))
    assert result.rounds[0].results[0].content == "Tool stuck timed out after 0.05 s"


@pytest.mark.parametrize("stream", [True, False])
def test_model_calls_reuse_one_connection(stream: bool) -> None:
    script = [
        tool_calls(("c1", "echo", {"x": "a"})),
        tool_calls(("c2", "echo", {"x": "b"})),
        text("ok"),
    ]
    with ScriptedServer(script) as server:
        result = anyio.run(run, "go", options(server, tools=[tool(echo)], stream=stream))
        assert result.text == "ok"
        assert len(server.requests) == 3
        assert server.connections == 1  # a streamed response is read to its end, then reused


def test_manual_mode_lists_the_calls_awaiting_results_until_each_is_answered() -> None:
    script = [tool_calls(("c1", "echo", {"x": "a"}), ("c2", "echo", {"x": "b"})), text("ok")]
    seen: list[tuple[dict[str, str], Phase]] = []

    async def main() -> str:
        opts = options(server, tools=[tool(echo)], auto_execute_tools=False)
        async with Client(opts) as client:
            seen.append((client.pending_tool_calls(), client.phase))
            await client.query("go")
            async for _ in client.events():  # up to ResultsRequested
                pass
            seen.append((client.pending_tool_calls(), client.phase))
            await client.add_tool_result("c1", "a")
            seen.append((client.pending_tool_calls(), client.phase))
            await client.add_tool_result("c2", "b")
            finish = await client.wait()
            seen.append((client.pending_tool_calls(), client.phase))
            assert finish is not None
            return finish.text

    with ScriptedServer(script) as server:
        assert anyio.run(main) == "ok"
    assert seen == [
        ({}, Phase.IDLE),
        ({"c1": "echo", "c2": "echo"}, Phase.AWAITING_RESULTS),
        ({"c2": "echo"}, Phase.AWAITING_RESULTS),
        ({}, Phase.IDLE),
    ]
