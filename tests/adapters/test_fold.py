"""`fold_journal`: the one fold of a journaled session through `step`, step by step."""

from __future__ import annotations

import attrs
import pytest

from toolreel.adapters import (
    JournalCorrupt,
    MemoryJournal,
    SessionError,
    SessionNotFound,
    Step,
    effect_record,
)
from toolreel.adapters._journal import Damage, JournalEntry
from toolreel.adapters.replay import JournalFold, fold_journal
from toolreel.core import (
    CallModel,
    Cancelled,
    Event,
    LoopConfig,
    ModelResponded,
    PlainOutput,
    PromptSubmitted,
    StepError,
    TextDelta,
    ToolSpec,
    ValidationFinished,
    initial_state,
    step,
)

CONFIG = LoopConfig(model="m")
CHANGED = LoopConfig(model="m2", system_prompt="Be brief.")
AGENT = LoopConfig(model="m", output=PlainOutput(tool=ToolSpec(name="record")))


def turn(prompt: str) -> list[Event]:
    return [PromptSubmitted(text=prompt), TextDelta(text=f"re {prompt}"), ModelResponded()]


def journal_of(events: list[Event], *, change_after: int | None = None) -> MemoryJournal:
    """A journal of one loop session "s" (its config changed after step `change_after`)."""
    journal = MemoryJournal()
    lease = journal.begin("s", CONFIG)
    state = initial_state(CONFIG)
    for seq, event in enumerate(events, start=1):
        if seq - 1 == change_after:
            journal.release(lease)
            lease = journal.begin("s", CHANGED, from_seq=change_after)
            state = attrs.evolve(state, config=CHANGED)
        state, effects = step(state, event)
        journal.append("s", [Step(seq=seq, event=event, effects=effects)])
    return journal


def test_each_step_folds_to_the_effects_it_recorded() -> None:
    journal = journal_of(turn("a") + turn("b"))
    fold = fold_journal(journal, "s")
    assert isinstance(fold, JournalFold)
    pairs = list(fold)
    assert [entry.seq for entry, _ in pairs] == [1, 2, 3, 4, 5, 6]
    for entry, effects in pairs:
        assert tuple(effect_record(effect) for effect in effects) == entry.effects
    assert fold.seq == 6
    assert [m.content for m in fold.state.history] == ["a", "re a", "b", "re b"]


def test_each_step_folds_under_the_config_recorded_for_it() -> None:
    journal = journal_of(turn("a") + turn("b"), change_after=3)
    fold = fold_journal(journal, "s")
    models = []
    for entry, effects in fold:
        models += [e["request"]["model"] for e in entry.effects if e["type"] == "CallModel"]
        assert tuple(effect_record(effect) for effect in effects) == entry.effects
    assert models == ["m", "m2"]
    assert fold.config == CONFIG and fold.state.config == CHANGED


def test_a_given_config_applies_to_every_step() -> None:
    journal = journal_of(turn("a") + turn("b"), change_after=3)
    fold = fold_journal(journal, "s", config=CHANGED)
    models = [e.request.model for _, effects in fold for e in effects if isinstance(e, CallModel)]
    assert models == ["m2", "m2"]


def test_a_given_config_must_be_of_the_sessions_kind() -> None:
    journal = MemoryJournal()
    journal.begin("a", AGENT)
    assert fold_journal(journal, "a").config == AGENT
    with pytest.raises(SessionError, match="is an agent run: replay it with a config"):
        fold_journal(journal, "a", config=CONFIG)
    with pytest.raises(SessionError, match="is a tool loop's: replay it with a config"):
        fold_journal(journal_of(turn("a")), "s", config=AGENT)
    with pytest.raises(SessionNotFound):
        fold_journal(journal, "nope")


def test_a_validation_in_a_chat_session_is_refused_as_an_event_that_cannot_happen() -> None:
    journal = journal_of(turn("a"))
    journal.append_entries(
        "s", [JournalEntry(seq=4, event=ValidationFinished(attempt=1), effects=())]
    )
    with pytest.raises(StepError, match="ValidationFinished"):
        list(fold_journal(journal, "s"))


def test_a_refused_event_leaves_the_fold_at_its_step() -> None:
    journal = journal_of(turn("a"))
    journal.append_entries("s", [JournalEntry(seq=4, event=ModelResponded(), effects=())])
    fold = fold_journal(journal, "s")
    with pytest.raises(StepError):
        list(fold)
    assert fold.entry is not None and fold.entry.seq == 4
    assert fold.entry.event == ModelResponded()


def test_with_a_damage_the_fold_reports_lost_steps_and_refuses_repeated_ones() -> None:
    events = [*turn("a"), Cancelled()]
    journal = journal_of(events)
    kept = [e for e in journal.entries("s") if e.seq != 2]
    lossy = MemoryJournal()
    lossy.begin("s", CONFIG)
    lossy.append_entries("s", kept)
    damage = Damage()
    assert [entry.seq for entry, _ in fold_journal(lossy, "s", damage=damage)] == [1, 3, 4]
    assert any("step 2 is missing" in warning for warning in damage.warnings)
    repeated = MemoryJournal()
    repeated.begin("s", CONFIG)
    first = next(journal.entries("s"))
    repeated.append_entries("s", [first, first])
    with pytest.raises(JournalCorrupt, match="stored twice"):
        list(fold_journal(repeated, "s", damage=Damage()))


def test_a_step_recorded_before_reason_codes_replays_the_same() -> None:
    # journals before reason codes recorded a core-made result without its `reason`
    from toolreel.adapters._fold import differs  # noqa: PLC0415 - this test's alone
    from toolreel.adapters._journal import messages_digest  # noqa: PLC0415
    from toolreel.core import (  # noqa: PLC0415
        ChatMessage,
        Emit,
        ResultReason,
        ToolCall,
        ToolResult,
        ToolRound,
    )
    from toolreel.core.notices import ToolResultReady  # noqa: PLC0415

    made = ToolResult(
        call_id="c",
        name="x",
        content="Unknown tool: x",
        is_error=True,
        reason=ResultReason.UNKNOWN_TOOL,
    )
    older = attrs.evolve(made, reason=None)
    effect = Emit(notice=ToolResultReady(result=made))
    entry = JournalEntry(
        seq=1,
        event=Cancelled(),
        effects=(effect_record(Emit(notice=ToolResultReady(result=older))),),
    )
    assert effect_record(effect) != entry.effects[0]
    assert differs(entry, (effect,)) is None
    call = ToolCall(id="c", name="x")
    rounds = (ToolRound(assistant_text="", tool_calls=(call,), results=(made,)),)
    message = ChatMessage(role="assistant", content="", tool_rounds=rounds)
    same = attrs.evolve(message, tool_rounds=(attrs.evolve(rounds[0], results=(older,)),))
    assert messages_digest([message]) == messages_digest([same])  # requests' digests too
