"""The eight behaviours of the open_agent auto-execution plan (seed 002) on toolreel's own
Client, read through `events()`, and more, against a scripted OpenAI-compatible HTTP server
on 127.0.0.1 — no patching of internals. (The plan's own tests, blocks and all, run on
toolreel.open_agent: tests/compat/test_seed002.py.)"""

from __future__ import annotations

import anyio
import pytest

from toolreel.adapters import Lease, MemoryJournal, SQLiteJournal
from toolreel.core import ChatMessage, Finish, ToolCall, ToolFinished, ToolResult, arguments_object
from toolreel.core.notices import (
    MessageRecorded,
    ResultsRequested,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallAnnounced,
    ToolCallStreaming,
    ToolResultReady,
)
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, Client, Divergence, replay, run, tool
from toolreel.shell.errors import (
    JournalUnavailable,
    NotOpen,
    SessionNotFound,
    StepError,
    TurnInProgress,
    UnknownToolCall,
)
from toolreel.shell.hooks import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    HookDecision,
)
from toolreel.shell.scripted import ScriptedServer, text, tool_calls


def options(server: ScriptedServer, **extra) -> AgentOptions:
    extra.setdefault("auto_execute_tools", True)
    return AgentOptions(
        system_prompt="test", model="test", base_url=server.url, api_key="sk-test", **extra
    )


async def events_of(client: Client, prompt: str) -> list:
    """What `events()` yields for `prompt`'s turn, to its end (manual mode: to its request)."""
    await client.query(prompt)
    return [item async for item in client.events()]


def announced(items: list) -> list[ToolCall]:
    """The calls the turn announced (before they ran)."""
    return [item.call for item in items if isinstance(item, ToolCallAnnounced)]


def failed(items: list) -> list[ToolResult]:
    """The error results the turn told."""
    return [i.result for i in items if isinstance(i, ToolResultReady) and i.result.is_error]


def streamed(items: list) -> str:
    """The text the turn streamed."""
    return "".join(item.text for item in items if isinstance(item, TextStreamed))


add_tool = tool("add", "Add", {"a": int, "b": int})(lambda args: {"result": args["a"] + args["b"]})


# Test 1: tool registry validation
def test_client_rejects_duplicate_tool_names() -> None:
    tool1 = tool("add", "Add", {"a": int, "b": int})(lambda args: args["a"] + args["b"])
    tool2 = tool("add", "Add2", {"x": int, "y": int})(lambda args: args["x"] + args["y"])
    opts = AgentOptions(
        system_prompt="test", model="test", base_url="http://127.0.0.1:9", tools=[tool1, tool2]
    )
    with pytest.raises(ValueError, match="Duplicate tool name: add"):
        Client(opts)


# Test 2: auto-execution with a successful tool
def test_auto_execute_successful_tool() -> None:
    script = [tool_calls(("call-1", "add", {"a": 25, "b": 17})), text("The answer is 42")]
    with ScriptedServer(script) as server:

        async def main() -> list:
            async with Client(options(server, tools=[add_tool])) as client:
                return await events_of(client, "Calculate 25 + 17")

        items = anyio.run(main)
        [call] = announced(items)
        assert (call.id, call.name) == ("call-1", "add")
        assert arguments_object(call.arguments) == {"a": 25, "b": 17}
        assert failed(items) == []
        assert isinstance(items[-1], Finish) and "42" in items[-1].text
        # The model saw the tool's result, as a JSON string, answering its call.
        tool_message = server.requests[1]["messages"][-1]
        assert tool_message == {
            "role": "tool",
            "tool_call_id": "call-1",
            "content": '{"result": 42}',
        }


def test_events_tell_a_call_and_its_arguments_as_they_stream_and_the_journal_replays(
    tmp_path,
) -> None:
    script = [tool_calls(("call-1", "add", {"a": 25, "b": 17})), text("The answer is 42")]
    with ScriptedServer(script) as server:

        async def main() -> list:
            opts = options(server, tools=[add_tool], journal=str(tmp_path / "j.db"))
            async with Client(opts) as client:
                return await events_of(client, "Calculate 25 + 17")

        items = anyio.run(main)
    calls = [i for i in items if isinstance(i, ToolCallStreaming | ToolArgumentsStreamed)]
    assert calls[0] == ToolCallStreaming(index=0, call_id="call-1", name="add")
    fragments = [i.fragment for i in calls[1:] if isinstance(i, ToolArgumentsStreamed)]
    assert len(fragments) == len(calls) - 1 >= 2  # one notice per fragment the model sent
    assert arguments_object("".join(fragments)) == {"a": 25, "b": 17}
    assert items.index(calls[-1]) < next(
        n for n, i in enumerate(items) if isinstance(i, ToolCallAnnounced)
    )
    journal = SQLiteJournal(tmp_path / "j.db")
    [session_id] = journal.sessions()
    assert not isinstance(replay(journal, session_id), Divergence)
    journal.close()


# Test 3: a tool raising
def test_auto_execute_tool_exception() -> None:
    def divide_handler(args):
        if args["b"] == 0:
            raise ValueError("Division by zero")
        return {"result": args["a"] / args["b"]}

    divide = tool("divide", "Divide", {"a": int, "b": int})(divide_handler)
    script = [tool_calls(("call-1", "divide", {"a": 10, "b": 0})), text("Cannot divide by zero")]
    with ScriptedServer(script) as server:

        async def main() -> list:
            async with Client(options(server, tools=[divide])) as client:
                return await events_of(client, "Divide 10 by 0")

        items = anyio.run(main)
        assert [call.id for call in announced(items)] == ["call-1"]
        [error] = failed(items)
        assert "Division by zero" in error.content
        assert items[-1].text == "Cannot divide by zero"
        assert server.requests[1]["messages"][-1]["content"] == "ValueError: Division by zero"


# Test 4: an unknown tool
def test_auto_execute_unknown_tool() -> None:
    script = [tool_calls(("call-1", "nonexistent", {})), text("Tool not found")]
    with ScriptedServer(script) as server:

        async def main() -> list:
            async with Client(options(server, tools=[])) as client:
                return await events_of(client, "Use nonexistent tool")

        items = anyio.run(main)
        assert [call.name for call in announced(items)] == ["nonexistent"]
        [error] = failed(items)
        assert "Unknown tool: nonexistent" in error.content
        assert items[-1].text == "Tool not found"


# Test 5: max iterations
def test_auto_execute_max_iterations() -> None:
    loop_tool = tool("loop", "Loop", {})(lambda args: {"status": "looping"})
    script = [tool_calls((f"call-{i}", "loop", {})) for i in range(10)]
    with ScriptedServer(script) as server:

        async def main():
            async with Client(options(server, tools=[loop_tool], max_tool_iterations=3)) as client:
                items = await events_of(client, "Start loop")
                return items, client.last_finish, client.history

        items, finish, history = anyio.run(main)
        assert len(announced(items)) == 3
        assert items[-1] == finish
        assert len(server.requests) == 3
        assert finish.reason is FinishReason.MAX_ITERATIONS and finish.max_iterations_reached
        assert len(history[-1].tool_rounds) == 3  # every call answered


# Test 6: PreToolUse blocks execution and the model sees why
def test_pre_tool_use_blocks_auto_execution() -> None:
    ran = []

    async def block_hook(event):
        if event.tool_name == "dangerous":
            return HookDecision(continue_=False, reason="Blocked")
        return None

    dangerous = tool("dangerous", "Dangerous", {})(
        lambda args: ran.append(1) or {"result": "executed"}
    )
    script = [tool_calls(("call-1", "dangerous", {})), text("Operation blocked")]
    with ScriptedServer(script) as server:

        async def main() -> list:
            opts = options(server, tools=[dangerous], hooks={HOOK_PRE_TOOL_USE: [block_hook]})
            async with Client(opts) as client:
                return await events_of(client, "Use dangerous tool")

        items = anyio.run(main)
        assert [call.name for call in announced(items)] == ["dangerous"]
        [error] = failed(items)
        assert "Blocked" in error.content
        assert items[-1].text == "Operation blocked"  # the model read why, and answered
        assert ran == []
        assert "Blocked" in server.requests[1]["messages"][-1]["content"]


# Test 7: UserPromptSubmit fires once, not on continuation
def test_user_prompt_submit_fires_once() -> None:
    hook_calls = []

    async def track_hook(event):
        hook_calls.append(event.prompt)

    script = [tool_calls(("call-1", "add", {"a": 1, "b": 2})), text("Result: 3")]
    with ScriptedServer(script) as server:

        async def main() -> None:
            opts = options(server, tools=[add_tool], hooks={HOOK_USER_PROMPT_SUBMIT: [track_hook]})
            async with Client(opts) as client:
                await events_of(client, "Calculate 1 + 2")

        anyio.run(main)
        assert hook_calls == ["Calculate 1 + 2"]
        assert len(server.requests) == 2


# Test 8: manual mode: the calls, then the caller's results, and the turn reads on
def test_manual_mode_events_end_at_the_request_and_read_on_after_the_results() -> None:
    script = [tool_calls(("call-1", "add", {"a": 1, "b": 2})), text("Result: 3")]
    with ScriptedServer(script) as server:

        async def main():
            async with Client(
                options(server, tools=[add_tool], auto_execute_tools=False)
            ) as client:
                items = await events_of(client, "Calculate 1 + 2")
                assert isinstance(items[-1], ResultsRequested)
                [call] = items[-1].calls
                assert announced(items) == [call]
                result = await add_tool.execute(arguments_object(call.arguments))
                await client.add_tool_result(call.id, result)
                history = client.history  # user, then the assistant turn holding call + result
                rest = [item async for item in client.events()]
                return history, rest, client.history

        history, rest, final_history = anyio.run(main)
        assert [m.role for m in history] == ["user", "assistant"]
        [tool_round] = history[1].tool_rounds
        assert tool_round.results[0].content == '{"result": 3}'
        assert streamed(rest) == "Result: 3"
        assert not any(isinstance(item, ResultsRequested) for item in rest)
        assert isinstance(rest[-1], Finish) and rest[-1].text == "Result: 3"
        assert final_history[-1] == ChatMessage(
            role="assistant", content="Result: 3", tool_rounds=(tool_round,)
        )
        # The continuation carried no new user message.
        assert [m["role"] for m in server.requests[1]["messages"]] == [
            "system",
            "user",
            "assistant",
            "tool",
        ]


def test_a_request_answered_before_it_was_read_does_not_stop_the_stream() -> None:
    """A reader that answers a call as soon as it is owed reads on past its request."""
    script = [tool_calls(("call-1", "add", {"a": 1, "b": 2})), text("Result: 3")]
    with ScriptedServer(script) as server:

        async def main() -> list:
            async with Client(
                options(server, tools=[add_tool], auto_execute_tools=False)
            ) as client:
                await client.query("Calculate 1 + 2")
                async for item in client.events():
                    if isinstance(item, ToolCallAnnounced):
                        break  # the request itself is left unread
                with anyio.fail_after(10):
                    while not client.pending_tool_calls():
                        await anyio.sleep(0.01)
                await client.add_tool_result("call-1", {"result": 3})
                return [item async for item in client.events()]

        rest = anyio.run(main)
        assert isinstance(rest[0], ResultsRequested)  # told, but no longer owed
        assert isinstance(rest[-1], Finish) and rest[-1].text == "Result: 3"


def test_events_with_no_turn_under_way_end_at_once() -> None:
    with ScriptedServer([text("Hi")]) as server:

        async def main() -> tuple[list, list, list]:
            async with Client(options(server)) as client:
                with anyio.fail_after(10):  # a hang is the failure this guards against
                    before = [item async for item in client.events()]
                answer = await events_of(client, "Hello")
                with anyio.fail_after(10):
                    return before, answer, [item async for item in client.events()]

        before, answer, after = anyio.run(main)
        assert (before, after) == ([], [])
        assert streamed(answer) == "Hi" and answer[-1].text == "Hi"


def test_manual_result_for_an_unknown_call_is_refused_with_the_pending_ids() -> None:
    script = [tool_calls(("call-1", "add", {"a": 1, "b": 2}))]
    with ScriptedServer(script) as server:

        async def main() -> None:
            async with Client(
                options(server, tools=[add_tool], auto_execute_tools=False)
            ) as client:
                await events_of(client, "1 + 2")
                with pytest.raises(UnknownToolCall) as caught:
                    await client.add_tool_result("nope", 3)
                assert isinstance(caught.value, ValueError)
                stray = ToolFinished(call_id="nope", output="3")
                assert (
                    str(caught.value)
                    == str(caught.value.__cause__)
                    == (  # the core's words
                        f"can't handle event {stray!r} when phase=AWAITING_RESULTS: "
                        "no call 'nope' awaits a result; awaiting ['call-1']"
                    )
                )
                assert isinstance(caught.value.__cause__, StepError)
                await client.interrupt()

        anyio.run(main)


def test_post_tool_use_is_told_the_arguments_the_pre_tool_use_hook_put_in() -> None:
    told: list[dict] = []

    def double_a(event):
        return HookDecision(modified_input={"a": event.tool_input["a"] * 2, "b": 0})

    def watch(event):
        told.append(event.tool_input)

    hooks = {HOOK_PRE_TOOL_USE: [double_a], HOOK_POST_TOOL_USE: [watch]}
    script = [tool_calls(("call-1", "add", {"a": 5, "b": 1})), text("10")]
    with ScriptedServer(script) as server:

        async def main() -> list:
            async with Client(options(server, tools=[add_tool], hooks=hooks)) as client:
                return await events_of(client, "5 + 1, doubled")

        anyio.run(main)
        assert server.requests[1]["messages"][-1]["content"] == '{"result": 10}'
    assert told == [{"a": 10, "b": 0}]  # what ran, not what the model first asked


# --- misuse -----------------------------------------------------------------------------


async def _use(client: Client, call: str) -> None:
    """One public call of the client."""
    if call == "query":
        await client.query("hi")
    elif call == "wait":
        await client.wait()
    elif call == "interrupt":
        await client.interrupt()
    elif call == "add_tool_result":
        await client.add_tool_result("call-1", 3)
    else:
        [_ async for _ in client.events()]


CALLS = ["query", "wait", "interrupt", "add_tool_result", "events"]


@pytest.mark.parametrize("call", CALLS)
def test_a_client_used_without_async_with_says_so(call: str) -> None:
    client = Client(AgentOptions(model="test", base_url="http://127.0.0.1:9", api_key="k"))
    with pytest.raises(NotOpen, match=r"use `async with Client\(options\) as client:`"):
        anyio.run(_use, client, call)


@pytest.mark.parametrize("call", CALLS)
def test_a_closed_client_says_so(call: str) -> None:
    async def main() -> None:
        opts = AgentOptions(model="test", base_url="http://127.0.0.1:9", api_key="k")
        async with Client(opts) as client:
            pass
        await _use(client, call)

    with pytest.raises(NotOpen):
        anyio.run(main)


def test_a_query_while_a_turn_runs_is_refused() -> None:
    script = [tool_calls(("call-1", "add", {"a": 1, "b": 2}))]
    with ScriptedServer(script) as server:

        async def main() -> None:
            opts = options(server, tools=[add_tool], auto_execute_tools=False)
            async with Client(opts) as client:
                await events_of(client, "1 + 2")  # the turn now awaits the result
                with pytest.raises(TurnInProgress, match="a turn is still running"):
                    await client.query("something else")

        anyio.run(main)


def test_resuming_an_unknown_session_names_it_and_the_journal(tmp_path) -> None:
    opts = AgentOptions(
        model="test", base_url="http://127.0.0.1:9", api_key="k", journal=str(tmp_path / "j.db")
    )

    async def main() -> None:
        async with Client.resume("no-such-id", opts):
            pass

    with pytest.raises(SessionNotFound, match=r"no session 'no-such-id' in .*j\.db") as caught:
        anyio.run(main)
    assert caught.value.session_id == "no-such-id"


class RecordingJournal(MemoryJournal):
    """A shared journal that notes when a client gives a session back or closes it."""

    def __init__(self, *, fail_after: int | None = None) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.fail_after = fail_after

    def append(self, session_id, steps) -> None:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise JournalUnavailable("journal test.db stayed locked for 5 s")
        self.calls.append("append")
        super().append(session_id, steps)

    def release(self, lease: Lease) -> None:
        self.calls.append(f"release {lease.session_id}")

    def close(self) -> None:
        self.calls.append("close")


def test_a_client_releases_a_shared_journals_session_and_leaves_it_open() -> None:
    journal = RecordingJournal()
    with ScriptedServer([text("hi")]) as server:

        async def main() -> None:
            async with Client(options(server, journal=journal, session_id="s1")) as client:
                await events_of(client, "hello")

        anyio.run(main)
    assert journal.calls[-1] == "release s1"
    assert "close" not in journal.calls


def test_a_client_releases_its_own_journals_session_before_closing_it(
    tmp_path, monkeypatch
) -> None:
    calls: list[str] = []
    release = SQLiteJournal.release

    def noted(self: SQLiteJournal, lease: Lease) -> None:
        calls.append(f"release {lease.session_id}")
        release(self, lease)

    monkeypatch.setattr(SQLiteJournal, "release", noted)
    close = SQLiteJournal.close
    monkeypatch.setattr(SQLiteJournal, "close", lambda self: calls.append("close") or close(self))
    opts = AgentOptions(
        model="test",
        base_url="http://127.0.0.1:9",
        api_key="k",
        journal=str(tmp_path / "j.db"),
        session_id="s1",
    )

    async def main() -> None:
        async with Client(opts):
            pass

    anyio.run(main)
    assert calls[:2] == ["release s1", "close"]  # (close then releases what it still holds)


@pytest.mark.parametrize("reader", ["wait", "events", "run"])
def test_a_journal_that_gives_up_stops_the_turn_with_its_own_error(reader: str) -> None:
    journal = RecordingJournal(fail_after=1)  # the prompt is saved; the next batch fails
    script = [tool_calls(("call-1", "add", {"a": 1, "b": 2})), text("3")]
    with ScriptedServer(script) as server:
        opts = options(server, tools=[add_tool], journal=journal, session_id="s1")

        async def main() -> None:
            if reader == "run":
                await run("1 + 2", opts)
                return
            async with Client(opts) as client:
                await client.query("1 + 2")
                if reader == "wait":
                    await client.wait()
                else:
                    [_ async for _ in client.events()]

        with pytest.raises(JournalUnavailable, match="stayed locked") as caught:
            anyio.run(main)
        assert type(caught.value) is JournalUnavailable  # not wrapped in an exception group
        assert len(server.requests) == 1  # the turn stopped
    assert journal.calls[-1] == "release s1"  # and the client closed


def test_the_event_stream_tells_each_message_that_enters_the_history() -> None:
    """The core persists a message; the shell tells the stream `MessageRecorded` for it."""
    with ScriptedServer([text("Hello!")]) as server:

        async def main() -> list:
            async with Client(options(server)) as client:
                await client.query("hi")
                return [item async for item in client.events()]

        items = anyio.run(main)
    recorded = [item.message for item in items if isinstance(item, MessageRecorded)]
    assert recorded == [
        ChatMessage(role="user", content="hi"),
        ChatMessage(role="assistant", content="Hello!"),
    ]
    assert isinstance(items[-1], Finish)
    assert isinstance(items[-2], MessageRecorded)


def test_a_journal_that_cannot_open_leaves_no_pooled_connection_behind(tmp_path) -> None:
    """The journal opens before the model: a Client refused for it took no connection."""
    from toolreel.adapters import http_model  # noqa: PLC0415 - a sharer of the pool, to see it

    with ScriptedServer([text("hi")]) as server:

        async def main() -> bool:
            bad = AgentOptions(
                base_url=server.url, model="m", api_key="k", journal=tmp_path / "no" / "j.db"
            )
            with pytest.raises(JournalUnavailable):
                Client(bad)
            sharer = http_model("openai", base_url=server.url, key="k")  # made in the loop:
            shared = sharer._client  # it takes the pool its settings share at once
            await sharer.aclose()
            return shared is not None and shared.is_closed  # no other holder kept it open

        assert anyio.run(main)
