"""The request diff renderer (adapters/_request_diff.py): a `RequestChange` per difference, text."""

from __future__ import annotations

import anyio
import attrs
import pytest

from toolreel.adapters import MemoryJournal, RequestChange, RequestDiff, diff_requests
from toolreel.adapters.replay import request_form
from toolreel.core import ChatMessage, ModelRequest, ToolCall, ToolResult, ToolRound, ToolSpec
from toolreel.shell import Client, Divergence, Recording, replay, tool
from toolreel.shell.errors import RequestMismatch
from toolreel.testing import ScriptedModel, text, tool_calls

ADD = ToolSpec(
    name="add",
    description="Add two integers.",
    parameters={"type": "object", "properties": {"a": {"type": "integer"}}},
)
MUL = ToolSpec(name="mul", description="Multiply.")
ASK = ChatMessage(role="user", content="What is 2 + 3?")
ROUND = ToolRound(
    assistant_text="",
    tool_calls=(ToolCall(id="c1", name="add", arguments='{"a": 2}'),),
    results=(ToolResult(call_id="c1", name="add", content="5"),),
)
WORKING = ChatMessage(role="assistant", content="", tool_rounds=(ROUND,))
REQUEST = ModelRequest(model="m", system="Be brief.", messages=(ASK, WORKING), tools=(ADD, MUL))


def changed(**fields: object) -> ModelRequest:
    return attrs.evolve(REQUEST, **fields)


def test_identical_requests_have_no_changes() -> None:
    diff = diff_requests(REQUEST, REQUEST)
    assert diff == RequestDiff(changes=())
    assert not diff and diff.text == "(no difference)"


def test_settings_show_old_and_new_as_json_on_one_line() -> None:
    diff = diff_requests(REQUEST, changed(model="n", temperature=0.5, tool_choice="required"))
    assert diff.changes == (
        RequestChange(kind="changed", field="model", recorded='"m"', replayed='"n"'),
        RequestChange(
            kind="changed", field="tool_choice", recorded='"auto"', replayed='"required"'
        ),
        RequestChange(kind="changed", field="temperature", recorded="null", replayed="0.5"),
    )
    assert diff.text.splitlines() == [
        "(- recorded, + replayed)",
        'model: "m" → "n"',
        'tool_choice: "auto" → "required"',
        "temperature: null → 0.5",
    ]


def test_a_system_prompt_change_is_a_unified_diff_and_its_removal_a_removal() -> None:
    assert str(diff_requests(REQUEST, changed(system="Be brief.\nAnd kind."))).splitlines()[1:] == [
        "system prompt:",
        "   Be brief.",
        "  +And kind.",
    ]
    (removal,) = diff_requests(REQUEST, changed(system=None)).changes
    assert removal == RequestChange(kind="removed", field="system prompt", recorded="Be brief.")


def test_tools_added_removed_reordered_and_parameters_as_pretty_json() -> None:
    wider = attrs.evolve(
        ADD, parameters={"type": "object", "properties": {"a": {"type": "number"}}}
    )
    div = ToolSpec(name="div")
    diff = diff_requests(REQUEST, changed(tools=(MUL, wider, div)))
    assert [(c.kind, c.where) for c in diff.changes] == [
        ("changed", "tool 'add' parameters"),
        ("added", "tool 'div'"),
        ("changed", "tools order"),
    ]
    lines = diff.text.splitlines()
    assert '  -      "type": "integer"' in lines and '  +      "type": "number"' in lines
    assert "tools order: add, mul → mul, add" in lines
    assert "tool 'mul' removed:" in diff_requests(REQUEST, changed(tools=(ADD,))).text


def test_a_changed_message_names_its_index_role_and_field() -> None:
    other = attrs.evolve(ROUND, tool_calls=(ToolCall(id="c1", name="add", arguments='{"a": 3}'),))
    diff = diff_requests(
        REQUEST, changed(messages=(ASK, attrs.evolve(WORKING, tool_rounds=(other,))))
    )
    (change,) = diff.changes
    assert (change.message, change.role, change.field) == (
        2,
        "assistant",
        "round 1 call 1 arguments",
    )
    assert change.where == "message 2 (assistant) round 1 call 1 arguments"
    assert diff.text.splitlines()[1:] == [
        "message 2 (assistant) round 1 call 1 arguments:",
        "   {",
        '  -  "a": 2',
        '  +  "a": 3',
        "   }",
    ]


def test_added_and_removed_messages_show_whole() -> None:
    follow = ChatMessage(role="user", content="And 4 + 4?")
    added = diff_requests(REQUEST, changed(messages=(ASK, WORKING, follow)))
    assert added.changes == (
        RequestChange(kind="added", field="", message=3, role="user", replayed="And 4 + 4?"),
    )
    assert added.text.splitlines()[1:] == ["message 3 (user) added:", "  + And 4 + 4?"]
    removed = diff_requests(REQUEST, changed(messages=(ASK,)))
    assert [(c.kind, c.message, c.role) for c in removed.changes] == [("removed", 2, "assistant")]
    assert "  - round 1 call 1: add [c1]" in removed.text.splitlines()


def test_a_journal_form_compares_messages_by_digest_and_says_so() -> None:
    form = request_form(REQUEST)
    assert diff_requests(form, REQUEST) == RequestDiff(changes=())
    diff = diff_requests(form, changed(messages=(ASK,), temperature=0.2))
    assert [c.field for c in diff.changes] == [
        "temperature",
        "messages (only their digest is known: they could not be rebuilt)",
    ]
    assert f"2 messages, digest {form['messages_digest']} → 1 message, digest" in diff.text


def recorded_chat() -> tuple[MemoryJournal, ScriptedModel]:
    """A journal holding one chat turn "hello" → "hi", system prompt "Be brief."."""
    model = ScriptedModel([text("hi")], http=False)
    journal = MemoryJournal()
    options = model.options(system_prompt="Be brief.", journal=journal, session_id="s")

    async def main() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("hello")
            await client.wait()

    anyio.run(main)
    return journal, model


def test_a_mismatch_and_a_divergence_carry_the_structured_diff() -> None:
    journal, model = recorded_chat()
    with pytest.raises(RequestMismatch) as mismatch:
        anyio.run(Recording(journal).rerun, model.options(system_prompt="Be kind."))
    expected = RequestChange(
        kind="changed", field="system prompt", recorded="Be brief.", replayed="Be kind."
    )
    assert mismatch.value.request_diff is not None
    assert mismatch.value.request_diff.changes == (expected,)
    divergence = replay(
        journal, "s", config=attrs.evolve(journal.config("s"), system_prompt="Be kind.")
    )
    assert isinstance(divergence, Divergence) and divergence.request_diff is not None
    assert divergence.request_diff.changes == (expected,)
    assert divergence.request_diff.labels == ("recorded", "replayed")


def test_a_divergence_without_a_request_names_what_each_side_did() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    calls = [tool_calls((f"c{i}", "add", {"a": i, "b": 1})) for i in range(2)]
    model = ScriptedModel([*calls, text("done")], http=False)
    journal = MemoryJournal()
    options = model.options(tools=[add], auto_execute_tools=True, journal=journal, session_id="s")

    async def main() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("count")
            await client.wait()

    anyio.run(main)
    capped = replay(journal, "s", config=attrs.evolve(journal.config("s"), max_iterations=1))
    assert isinstance(capped, Divergence) and capped.request_diff is None
    assert capped.diff.startswith(
        "effects: Emit(ToolResultReady), Emit(RoundFinished), CallModel\n"
        "      → Emit(ToolResultReady), Emit(RoundFinished), Persist, Finish\n"
        "--- recorded\n+++ replayed\n"
    )


def tampered(journal: MemoryJournal) -> MemoryJournal:
    """A copy of session "s" whose first request's messages digest no longer matches them."""
    copy = MemoryJournal()
    copy.begin("s", journal.config("s"))
    entries = list(journal.entries("s"))
    first = entries[0]
    effects = tuple(
        {**data, "request": {**data["request"], "messages_digest": "0" * 16}}
        if data["type"] == "CallModel"
        else data
        for data in first.effects
    )
    copy.append_entries("s", [attrs.evolve(first, effects=effects), *entries[1:]])
    return copy


def test_the_digest_still_decides_when_the_rebuilt_messages_do_not_match_it() -> None:
    journal, model = recorded_chat()
    copy = tampered(journal)
    with pytest.raises(RequestMismatch, match="model call 1 differs") as mismatch:
        anyio.run(Recording(copy).rerun, model.options(system_prompt="Be brief."))
    assert mismatch.value.request_diff is not None
    (change,) = mismatch.value.request_diff.changes
    assert change.field == "messages (only their digest is known: they could not be rebuilt)"
    assert change.recorded == "1 message, digest 0000000000000000"
    divergence = replay(copy, "s")
    assert isinstance(divergence, Divergence) and divergence.request_diff is not None
    assert divergence.request_diff.changes[0].recorded == "1 message, digest 0000000000000000"
