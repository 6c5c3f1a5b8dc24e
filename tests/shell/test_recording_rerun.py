"""`Recording.rerun` answers the tool calls the way the recorded session did, and a
recording reruns from its beginning every time.

How the recorded session's tool calls were answered is part of the recording
(its config says whether tools ran; its events hold a manual caller's results
and a person's approvals), so the rerun answers them the same way whatever the
options' `auto_execute_tools` says: nobody is left waiting for an answer that
no one can give. Each test runs under `fail_after`, so a rerun that waits for
ever fails here instead of hanging the suite.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
import attrs
import pytest

from toolreel.core import Finish, ImagePart
from toolreel.core.notices import ResultsRequested
from toolreel.core.outcomes import FinishReason
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    Client,
    OutputTool,
    Recording,
    execute_agent,
    resume_agent,
    run,
    tool,
)
from toolreel.shell.errors import ApprovalPending, RequestMismatch
from toolreel.testing import ScriptedModel, text, tool_calls

T = TypeVar("T")

#: Far more than any of these reruns takes; a rerun that hangs fails after it.
LIMIT = 30

RAN: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    RAN.append(f"add({a}, {b})")
    return a + b


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (recorded instead)."""
    RAN.append(f"delete({path})")
    return f"deleted {path}"


#: A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)
DOT = ImagePart(media_type="image/png", data=PNG)


@tool
def snapshot() -> list[Any]:
    """A picture and its caption."""
    RAN.append("snapshot()")
    return ["a dot", DOT]


@pytest.fixture(autouse=True)
def _nothing_ran() -> None:
    RAN.clear()


def within(work: Callable[[], Awaitable[T]]) -> T:
    """Run `work`, failing with TimeoutError instead of waiting for ever."""

    async def bounded() -> T:
        with anyio.fail_after(LIMIT):
            return await work()

    return anyio.run(bounded)


def calculator() -> ScriptedModel:
    """A model that calls `add` once, then answers."""
    return ScriptedModel([tool_calls(("c1", "add", {"a": 2, "b": 3})), text("5")], http=False)


def offline(tool: Any = add, **changes: Any) -> AgentOptions:
    """The program's options for a rerun: its tool, no server (AgentOptions' defaults else)."""
    return AgentOptions(model="scripted", tools=[tool], **changes)


def recorded_run(tmp_path: Path) -> Recording:
    """A session recorded through `run()`, which runs the tools."""
    model = calculator()
    journal = tmp_path / "run.jsonl"
    options = model.options(tools=[add], journal=str(journal), session_id="s")
    assert within(lambda: run("2 + 3?", options, model=model.model)).text == "5"
    return Recording.from_file(journal)


def test_a_session_recorded_by_run_reruns_with_default_options(tmp_path: Path) -> None:
    recording = recorded_run(tmp_path)
    RAN.clear()
    assert not offline().auto_execute_tools  # the default: manual mode
    assert within(lambda: recording.rerun(offline())) == [FinishReason.COMPLETED]
    assert RAN == []  # the recorded output answered, as the recorded tool did
    assert recording.history[-1].content == "5"


@pytest.mark.parametrize("auto_execute", [True, False])
def test_a_recording_reruns_again_and_again_from_its_beginning(
    tmp_path: Path, auto_execute: bool
) -> None:
    recording = recorded_run(tmp_path)
    options = offline(auto_execute_tools=auto_execute)
    assert within(lambda: recording.rerun(options)) == [FinishReason.COMPLETED]
    assert within(lambda: recording.rerun(options)) == [FinishReason.COMPLETED]
    with pytest.raises(RequestMismatch, match="model call 1 differs"):
        within(lambda: recording.rerun(attrs.evolve(options, system_prompt="Be verbose.")))
    assert within(lambda: recording.rerun(options)) == [FinishReason.COMPLETED]


def test_two_reruns_of_one_recording_at_once_do_not_share_their_progress(tmp_path: Path) -> None:
    recording = recorded_run(tmp_path)
    options = offline(auto_execute_tools=True)  # as recorded: this pins the sharing alone
    reasons: list[list[FinishReason]] = []

    async def both() -> None:
        async def one() -> None:
            reasons.append(await recording.rerun(options))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(one)
            tasks.start_soon(one)

    within(both)
    assert reasons == [[FinishReason.COMPLETED]] * 2


def test_a_manual_session_reruns_with_the_results_its_caller_gave(tmp_path: Path) -> None:
    model = calculator()
    journal = tmp_path / "manual.jsonl"
    options = model.options(tools=[add], journal=str(journal), session_id="s")

    async def record() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("2 + 3?")
            async for item in client.events():
                if isinstance(item, ResultsRequested):
                    for call in item.calls:  # the caller answers, not the tool
                        await client.add_tool_result(call.id, "five", is_error=False)
            async for item in client.events():
                assert not isinstance(item, ResultsRequested)
            assert (await client.wait()) is not None

    within(record)
    recording = Recording.from_file(journal)
    for options in (offline(), offline(auto_execute_tools=True)):  # the recording decides
        assert within(partial(recording.rerun, options)) == [FinishReason.COMPLETED]
        assert RAN == []
        rounds = recording.history[-1].tool_rounds
        assert [result.content for result in rounds[0].results] == ["five"]


def test_a_manual_session_left_unanswered_fails_its_rerun_clearly(tmp_path: Path) -> None:
    model = calculator()
    journal = tmp_path / "unanswered.jsonl"
    options = model.options(tools=[add], journal=str(journal), session_id="s")

    async def record() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("2 + 3?")
            async for _item in client.events():
                pass  # nobody answers: closing the Client cancels the turn

    within(record)
    lines = journal.read_text().splitlines()  # as if the process died awaiting the result
    journal.write_text("\n".join(lines[:-1]) + "\n")
    recording = Recording.from_file(journal)
    with pytest.raises(RequestMismatch, match=r"tool call add\(.*\) was never answered"):
        within(lambda: recording.rerun(offline()))


@pytest.mark.parametrize("auto_execute", [True, False], ids=["tools ran", "manual"])
def test_a_session_with_images_reruns_with_them(tmp_path: Path, auto_execute: bool) -> None:
    model = ScriptedModel([tool_calls(("c1", "snapshot", {})), text("a dot")], http=False)
    journal = tmp_path / "images.jsonl"
    options = model.options(
        tools=[snapshot], auto_execute_tools=auto_execute, journal=str(journal), session_id="s"
    )

    async def record() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("what is this?", images=[DOT])  # a prompt with an image
            async for item in client.events():
                if isinstance(item, ResultsRequested):  # manual: the caller's picture
                    await client.add_tool_result(item.calls[0].id, ["a dot", DOT])
            assert await client.wait() is not None

    within(record)
    RAN.clear()
    recording = Recording.from_file(journal)
    for _ in range(2):
        assert within(lambda: recording.rerun(offline(snapshot))) == [FinishReason.COMPLETED]
        assert recording.history[0].images == (DOT,)
        result = recording.history[-1].tool_rounds[0].results[0]
        assert (result.content, result.images) == ("a dot", (DOT,))
    assert RAN == []


def recorded_decisions(tmp_path: Path) -> Recording:
    """A session in which a person approved one held call and denied the other."""
    model = ScriptedModel(
        [
            tool_calls(("c1", "delete", {"path": "a"}), ("c2", "delete", {"path": "b"})),
            text("deleted a, kept b"),
        ],
        http=False,
    )
    journal = tmp_path / "approvals.jsonl"
    options = model.options(
        tools=[delete], auto_execute_tools=True, journal=str(journal), session_id="s"
    )

    async def record() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("delete a and b")
            assert await client.wait() is None  # paused for approval
            await client.approve("c1")
            await client.deny("c2", "keep b")
            finish = await client.wait()
            assert isinstance(finish, Finish)

    within(record)
    return Recording.from_file(journal)


def test_a_session_with_approvals_reruns_with_the_recorded_decisions(tmp_path: Path) -> None:
    recording = recorded_decisions(tmp_path)
    RAN.clear()
    assert within(lambda: recording.rerun(offline(delete))) == [FinishReason.COMPLETED]
    assert RAN == []
    results = recording.history[-1].tool_rounds[0].results
    assert [(result.content, result.is_error) for result in results] == [
        ("deleted a", False),
        ("keep b", True),
    ]


def test_a_session_left_paused_for_approval_fails_its_rerun_clearly(tmp_path: Path) -> None:
    model = ScriptedModel([tool_calls(("c1", "delete", {"path": "a"})), text("ok")], http=False)
    journal = tmp_path / "paused.jsonl"
    options = model.options(
        tools=[delete], auto_execute_tools=True, journal=str(journal), session_id="s"
    )

    async def record() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("delete a")
            assert await client.wait() is None  # paused; nobody decides

    within(record)
    recording = Recording.from_file(journal)
    with pytest.raises(RequestMismatch, match=r"approval of tool call delete\(.*\) was never"):
        within(lambda: recording.rerun(offline(delete)))


@attrs.frozen
class Removed:
    """What the agent removed."""

    paths: list[str]


def cleaner() -> AgentDefinition[str, Removed]:
    """An agent whose helper needs a person's approval."""
    return AgentDefinition(
        build_prompt=lambda paths: f"remove {paths}",
        output=OutputTool.of(Removed, name="report"),
        helpers=[delete],
    )


def test_an_agent_run_with_approvals_reruns_with_the_recorded_decisions(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_calls(("c1", "delete", {"path": "a"})),
            tool_calls(("o1", "report", {"paths": ["a"]})),
        ],
        http=False,
    )
    journal = tmp_path / "agent.jsonl"
    options = AgentOptions(model="scripted", journal=str(journal), session_id="s")
    definition = cleaner()

    async def record() -> None:
        with pytest.raises(ApprovalPending):
            await execute_agent(definition, "a", options, model=model.model)
        result = await resume_agent("s", definition, options, approve=["c1"], model=model.model)
        assert isinstance(result, AgentSuccess)

    within(record)
    RAN.clear()
    recording = Recording.from_file(journal)
    result = within(lambda: recording.rerun(AgentOptions(model="scripted"), agent=cleaner()))
    assert isinstance(result, AgentSuccess)
    assert result.output == Removed(paths=["a"])
    assert result.metadata.journal is None  # the rerun journals nothing of its own
    assert RAN == []


def test_an_agent_run_with_images_reruns_with_them(tmp_path: Path) -> None:
    model = ScriptedModel(
        [tool_calls(("c1", "snapshot", {})), tool_calls(("o1", "report", {"paths": ["dot"]}))],
        http=False,
    )
    journal = tmp_path / "agent-images.jsonl"
    options = AgentOptions(model="scripted", journal=str(journal), session_id="s")
    definition = AgentDefinition(
        build_prompt=lambda what: f"describe {what}",
        output=OutputTool.of(Removed, name="report"),
        helpers=[snapshot],
    )
    recorded = within(
        lambda: execute_agent(definition, "this", options, model=model.model, images=[DOT])
    )
    assert isinstance(recorded, AgentSuccess)
    RAN.clear()
    recording = Recording.from_file(journal)
    result = within(lambda: recording.rerun(AgentOptions(model="scripted"), agent=definition))
    assert isinstance(result, AgentSuccess)
    assert result.output == Removed(paths=["dot"])
    assert RAN == []
