"""Compaction (rule 18 of core/_step.py, core/_context.py): event lists in, effects out."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from loop import ADD, call, config, done, notices, of_type, text

from toolreel.adapters.records import config_data, config_of
from toolreel.core import (
    CallModel,
    Cancelled,
    ChatMessage,
    ConfigError,
    Effect,
    Event,
    Finish,
    HistoryReplaced,
    LoopConfig,
    ModelCallFailed,
    ModelRequest,
    ModelResponded,
    PromptSubmitted,
    ReasoningDelta,
    State,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    Usage,
    initial_state,
    step,
)
from toolreel.core._compaction import (
    DEFAULT_SUMMARY_PROMPT,
    SUMMARY_HEADER,
    SUMMARY_SYSTEM_PROMPT,
)
from toolreel.core._history import unanswered_calls
from toolreel.core.compaction import KeepTokens, KeepTurns, Summarise
from toolreel.core.notices import ContextCompacted, ModelChanged, TextStreamed
from toolreel.core.outcomes import Completed, Failed, FailureCode
from toolreel.core.policies import FallbackPolicy

ARGS = '{"a": 1, "b": 2}'


def feed(state: State, events: list[Event]) -> tuple[State, list[Effect]]:
    """Fold `events` from `state`: the state after them and every effect, in order."""
    effects: list[Effect] = []
    for event in events:
        state, made = step(state, event)
        effects.extend(made)
    return state, effects


def tool_turn(number: int, answer: str = "") -> list[Event]:
    """Turn `number`: a prompt, a response calling `add`, its result, then the answer."""
    return [
        PromptSubmitted(text=f"question {number}"),
        *call(0, f"c{number}", "add", ARGS),
        done("tool_calls", input_tokens=0, output_tokens=0),
        ToolFinished(call_id=f"c{number}", output="3"),
        *text(answer or f"answer {number}"),
        done(input_tokens=0, output_tokens=0),
    ]


def session(policy: Any, turns: int, **overrides: Any) -> tuple[State, list[Effect]]:
    """`turns` tool turns under `policy`."""
    state = initial_state(config(compaction=policy, **overrides))
    events = [event for number in range(1, turns + 1) for event in tool_turn(number)]
    return feed(state, events)


def requests(effects: list[Effect]) -> list[ModelRequest]:
    """The requests of the turns' model calls (not of summary calls)."""
    return [e.request for e in of_type(effects, CallModel) if not e.summary]


def prompts(messages: tuple[ChatMessage, ...]) -> list[str]:
    """The user messages' texts."""
    return [m.content for m in messages if m.role == "user"]


# --- no policy ------------------------------------------------------------------------------


def test_without_a_policy_every_request_carries_the_whole_history() -> None:
    state, effects = session(None, 5)
    last = requests(effects)[-1]
    assert last.messages[:-1] == state.history[:-1]  # then the running rounds
    assert prompts(last.messages) == [f"question {n}" for n in range(1, 6)]
    assert notices(effects, ContextCompacted) == []


# --- keep the last N turns ------------------------------------------------------------------


def test_keep_turns_carries_the_last_turns_and_the_running_one() -> None:
    _, effects = session(KeepTurns(turns=2), 4)
    firsts = [r for r in requests(effects) if r.messages[-1].role == "user"]
    assert [prompts(r.messages) for r in firsts] == [
        ["question 1"],
        ["question 1", "question 2"],
        ["question 2", "question 3"],
        ["question 3", "question 4"],
    ]


def test_a_compaction_is_told_before_the_call_it_shortens() -> None:
    _, effects = session(KeepTurns(turns=2), 3)
    told = notices(effects, ContextCompacted)
    assert told == [ContextCompacted(first=0, start=2)]
    position = effects.index(next(e for e in effects if getattr(e, "notice", None) == told[0]))
    assert isinstance(effects[position + 1], CallModel)


def test_the_history_keeps_every_message_compaction_leaves_out() -> None:
    state, _ = session(KeepTurns(turns=1), 4)
    assert prompts(state.history) == [f"question {n}" for n in range(1, 5)]
    assert state.context.start == 6


def test_the_running_turns_rounds_are_carried_whole_with_their_results() -> None:
    _, effects = session(KeepTurns(turns=1), 3)
    second_call = requests(effects)[-1]
    assert prompts(second_call.messages) == ["question 3"]
    rounds = second_call.messages[-1].tool_rounds
    assert [c.id for r in rounds for c in r.tool_calls] == ["c3"]
    assert [r.call_id for t in rounds for r in t.results] == ["c3"]
    assert unanswered_calls(second_call.messages) == ()


def test_pinned_messages_and_the_system_prompt_are_always_carried() -> None:
    _, effects = session(KeepTurns(turns=1, pinned=2), 4, system_prompt="Be brief.")
    last = requests(effects)[-1]
    assert last.system == "Be brief."
    assert prompts(last.messages) == ["question 1", "question 4"]
    assert last.messages[1].content == "answer 1"
    assert notices(effects, ContextCompacted)[0] == ContextCompacted(first=2, start=4)


def test_pinned_messages_past_the_history_are_all_of_it() -> None:
    _, effects = session(KeepTurns(turns=1, pinned=50), 3)
    assert prompts(requests(effects)[-1].messages) == ["question 1", "question 2", "question 3"]
    assert notices(effects, ContextCompacted) == []


def test_replacing_the_history_carries_all_of_the_new_one() -> None:
    state, _ = session(KeepTurns(turns=1), 3)
    history = state.history
    state, effects = feed(state, [HistoryReplaced(history=history), *tool_turn(4)])
    first = requests(effects)[0]
    assert prompts(first.messages) == ["question 4"]  # compacted again, from the start
    assert notices(effects, ContextCompacted) == [ContextCompacted(first=0, start=6)]


def test_a_continued_turn_keeps_the_prompt_it_continues() -> None:
    from toolreel.core.policies import EmptyPromptPolicy  # noqa: PLC0415 - one test's policy

    cfg = config(compaction=KeepTurns(turns=1), empty_prompt=EmptyPromptPolicy.CONTINUE)
    state, _ = feed(initial_state(cfg), [*tool_turn(1), *tool_turn(2)[:-2], Cancelled()])
    state, effects = feed(state, [PromptSubmitted(text="")])
    (request,) = requests(effects)
    assert prompts(request.messages) == ["question 2"]
    assert unanswered_calls(request.messages) == ()


# --- keep within a token budget -------------------------------------------------------------


def test_keep_tokens_counts_one_token_per_four_characters_before_any_report() -> None:
    state = initial_state(config(tools=(), compaction=KeepTokens(tokens=10)))
    events: list[Event] = []
    for _ in range(3):
        events += [PromptSubmitted(text="x" * 16), *text("y" * 16), ModelResponded()]
    _, effects = feed(state, events)
    # each turn is 32 characters, 8 tokens: the running turn's prompt alone fits
    assert notices(effects, ContextCompacted) == [
        ContextCompacted(first=0, start=2, tokens=4),
        ContextCompacted(first=2, start=4, tokens=4),
    ]


def test_keep_tokens_counts_at_the_rate_the_provider_reported() -> None:
    state = initial_state(config(tools=(), compaction=KeepTokens(tokens=10)))
    events: list[Event] = []
    for reported in (2, 6, 10):  # 16, 48, 80 characters: one token per eight
        events += [PromptSubmitted(text="x" * 16), *text("y" * 16)]
        events += [ModelResponded(usage=Usage(input_tokens=reported))]
    state, effects = feed(state, events)
    assert notices(effects, ContextCompacted) == []
    _, effects = feed(state, [PromptSubmitted(text="x" * 16)])
    # 112 characters, 14 tokens: one turn out (at one per four, three turns would go)
    assert notices(effects, ContextCompacted) == [ContextCompacted(first=0, start=2, tokens=10)]


def test_the_running_turn_is_carried_even_alone_past_the_budget() -> None:
    _, effects = session(KeepTokens(tokens=1), 3)
    for request in requests(effects):
        assert prompts(request.messages)[-1] == prompts(request.messages)[0]
    assert notices(effects, ContextCompacted)[0].start == 2


@pytest.mark.parametrize("system_prompt", [None, "s" * 4000])
def test_keep_tokens_counts_the_system_prompt(system_prompt: str | None) -> None:
    _, effects = session(KeepTokens(tokens=1000), 3, system_prompt=system_prompt)
    assert bool(notices(effects, ContextCompacted)) == (system_prompt is not None)


def test_keep_tokens_counts_the_tools() -> None:
    _, effects = session(KeepTokens(tokens=150), 6, tools=(ADD,))
    many = tuple(attrs.evolve(ADD, name=f"add{n}") for n in range(5))
    _, more = session(KeepTokens(tokens=150), 6, tools=(ADD, *many))
    assert notices(effects, ContextCompacted) == []
    assert notices(more, ContextCompacted) != []


# --- summarise ------------------------------------------------------------------------------


def summarised_session() -> tuple[State, list[Effect]]:
    """Three turns under Summarise(KeepTurns(2)), stopped at the summary call of turn 3."""
    policy = Summarise(within=KeepTurns(turns=2), model="cheap")
    state, _ = session(policy, 2, system_prompt="Be brief.")
    return feed(state, [PromptSubmitted(text="question 3")])


def test_a_summary_call_comes_before_the_call_that_would_leave_turns_out() -> None:
    state, effects = summarised_session()
    (summary,) = of_type(effects, CallModel)
    assert summary.summary
    asked = summary.request
    assert (asked.model, asked.system) == ("cheap", SUMMARY_SYSTEM_PROMPT)
    assert asked.tool_choice == "none"
    assert prompts(asked.messages) == ["question 1", DEFAULT_SUMMARY_PROMPT]
    assert state.phase.value == "summarising"


def test_the_summary_replaces_the_turns_it_covers() -> None:
    state, _ = summarised_session()
    state, effects = feed(state, [*text("They added", " 1 and 2."), done(input_tokens=7)])
    assert notices(effects, TextStreamed) == []  # the summary is not the answer
    assert notices(effects, ContextCompacted) == [
        ContextCompacted(first=0, start=2, summary="They added 1 and 2.")
    ]
    (request,) = requests(effects)
    assert request.system == "Be brief."
    assert request.messages[0] == ChatMessage(
        role="user", content=SUMMARY_HEADER + "They added 1 and 2."
    )
    assert prompts(request.messages)[1:] == ["question 2", "question 3"]
    assert request is of_type(effects, CallModel)[0].request
    assert of_type(effects, CallModel)[0].iteration == 1
    state, effects = feed(state, [*text("ok"), done()])
    (finish,) = of_type(effects, Finish)
    assert finish.usage.input_tokens == 17  # the summary call's tokens are the turn's too
    assert finish.outcome == Completed(text="ok")  # the summary is no part of the answer


def test_the_next_summary_includes_the_last_one() -> None:
    state, _ = summarised_session()
    state, _ = feed(state, [*text("S1"), done(), *text("a3"), done()])
    state, effects = feed(state, [PromptSubmitted(text="question 4")])
    (summary,) = of_type(effects, CallModel)
    assert prompts(summary.request.messages) == [
        SUMMARY_HEADER + "S1",
        "question 2",
        DEFAULT_SUMMARY_PROMPT,
    ]


def test_a_failed_summary_leaves_the_turns_out_unsummarised() -> None:
    state, _ = summarised_session()
    state, effects = feed(state, [*text("half"), ModelCallFailed(retryable=True, message="503")])
    assert notices(effects, ContextCompacted) == [ContextCompacted(first=0, start=2)]
    (request,) = requests(effects)
    assert prompts(request.messages) == ["question 2", "question 3"]


def test_an_empty_summary_is_no_summary() -> None:
    state, _ = summarised_session()
    state, effects = feed(state, [*text("  "), done()])
    assert notices(effects, ContextCompacted) == [ContextCompacted(first=0, start=2)]


def test_reasoning_and_calls_in_a_summary_are_ignored() -> None:
    state, _ = summarised_session()
    noise: list[Event] = [
        ReasoningDelta(text="hmm"),
        ToolCallStarted(index=0, call_id="x", name="add"),
        ToolCallArgumentsDelta(index=0, fragment="{}"),
    ]
    after, effects = feed(state, noise)
    assert (after, effects) == (state, [])


def test_a_cancel_during_the_summary_call_ends_the_turn() -> None:
    state, _ = summarised_session()
    state, effects = feed(state, [Cancelled()])
    (finish,) = of_type(effects, Finish)
    assert isinstance(finish.outcome, Cancelled)
    assert state.phase.value == "idle"


# --- context too long -----------------------------------------------------------------------

TOO_LONG = ModelCallFailed(
    retryable=False, message="prompt is too long", status=400, context_too_long=True
)


def test_too_long_leaves_out_the_older_half_and_calls_once_more() -> None:
    state, _ = session(KeepTurns(turns=10), 4)
    state, effects = feed(state, [PromptSubmitted(text="question 5"), TOO_LONG])
    assert notices(effects, ContextCompacted) == [ContextCompacted(first=0, start=4, too_long=True)]
    retried = of_type(effects, CallModel)[-1]
    assert retried.retry == 1
    assert prompts(retried.request.messages) == ["question 3", "question 4", "question 5"]
    state, effects = feed(state, [*text("fine"), done()])
    (finish,) = of_type(effects, Finish)
    assert isinstance(finish.outcome, Completed)


def test_too_long_twice_in_a_turn_fails_it() -> None:
    state, _ = session(KeepTurns(turns=10), 4)
    _, effects = feed(state, [PromptSubmitted(text="question 5"), TOO_LONG, TOO_LONG])
    (finish,) = of_type(effects, Finish)
    assert finish.outcome == Failed(
        code=FailureCode.MODEL_ERROR, message="prompt is too long", status=400
    )


@pytest.mark.parametrize(
    "policy", [None, KeepTurns(turns=10, on_too_long=False)], ids=["no policy", "not on too long"]
)
def test_too_long_without_the_policy_fails_as_any_fatal_failure(policy: Any) -> None:
    state, _ = session(policy, 2)
    _, effects = feed(state, [PromptSubmitted(text="question 3"), TOO_LONG])
    assert notices(effects, ContextCompacted) == []
    assert isinstance(of_type(effects, Finish)[0].outcome, Failed)


def test_too_long_with_only_the_running_turn_carried_fails() -> None:
    state = initial_state(config(compaction=KeepTurns(turns=3)))
    _, effects = feed(state, [PromptSubmitted(text="question 1"), TOO_LONG])
    assert isinstance(of_type(effects, Finish)[0].outcome, Failed)


def test_summarise_follows_its_policy_on_too_long() -> None:
    policy = Summarise(within=KeepTurns(turns=9, on_too_long=False))
    assert (policy.on_too_long, policy.pinned) == (False, 0)
    state, _ = session(policy, 2)
    _, effects = feed(state, [PromptSubmitted(text="question 3"), TOO_LONG])
    assert isinstance(of_type(effects, Finish)[0].outcome, Failed)


# --- the policy's records -------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: KeepTurns(turns=0),
        lambda: KeepTurns(turns=True),
        lambda: KeepTurns(turns=2, pinned=-1),
        lambda: KeepTokens(tokens=0),
        lambda: KeepTokens(tokens=1.5),
        lambda: Summarise(within=None),
        lambda: Summarise(within=KeepTurns(turns=1), prompt="\ud800"),
    ],
)
def test_a_policy_out_of_range_is_a_config_error(make: Any) -> None:
    with pytest.raises(ConfigError):
        make()


@pytest.mark.parametrize(
    "policy",
    [
        KeepTurns(turns=3, pinned=1),
        KeepTokens(tokens=4000, on_too_long=False),
        Summarise(within=KeepTokens(tokens=100), model="small"),
        None,
    ],
)
def test_a_config_with_a_policy_is_saved_and_read_back(policy: Any) -> None:
    cfg = LoopConfig(model="m", compaction=policy)
    data = config_data(cfg)
    assert config_of(data) == cfg
    assert ("compaction" in data) == (policy is not None)  # older configs read unchanged


# --- what each branch is for ----------------------------------------------------------------


def test_a_summary_call_without_tools_leaves_the_tool_choice_alone() -> None:
    policy = Summarise(within=KeepTurns(turns=1))
    state = initial_state(config(tools=(), compaction=policy))
    answer: list[Event] = [*text("a"), done()]
    _, effects = feed(state, [PromptSubmitted(text="q1"), *answer, PromptSubmitted(text="q2")])
    summary = of_type(effects, CallModel)[-1]
    assert summary.summary
    assert (summary.request.tools, summary.request.tool_choice) == ((), "auto")


def test_an_empty_text_delta_of_a_summary_changes_nothing() -> None:
    state, _ = summarised_session()
    after, effects = feed(state, text(""))
    assert (after, effects) == (state, [])


def test_a_summary_calls_tokens_count_for_the_session_too() -> None:
    state, _ = summarised_session()
    before = state.usage.input_tokens
    state, _ = feed(state, [*text("S"), done(input_tokens=7, output_tokens=3)])
    assert state.usage.input_tokens == before + 7
    assert state.usage.output_tokens >= 3


def test_replacing_the_history_drops_the_summary() -> None:
    state, _ = summarised_session()
    state, _ = feed(state, [*text("S1"), done(), *text("a3"), done()])
    assert state.context.summary == "S1"
    state, effects = feed(state, [HistoryReplaced(history=()), PromptSubmitted(text="fresh")])
    (request,) = requests(effects)
    assert prompts(request.messages) == ["fresh"]


def test_the_rate_is_learnt_from_the_request_a_summary_shortened() -> None:
    policy = Summarise(within=KeepTokens(tokens=30))
    state = initial_state(config(tools=(), compaction=policy))
    turn: list[Event] = [PromptSubmitted(text="x" * 40), *text("y" * 40), ModelResponded()]
    state, effects = feed(state, [*turn, *turn, PromptSubmitted(text="x" * 40)])
    assert of_type(effects, CallModel)[-1].summary  # 200 characters: 50 tokens
    state, effects = feed(state, [*text("S"), done(input_tokens=5)])
    (request,) = requests(effects)
    chars = sum(len(m.content) for m in request.messages)
    state, _ = feed(state, [*text("z"), done(input_tokens=chars // 2)])
    assert state.context.counted == (chars // 2, chars)


def test_without_a_reported_count_the_rate_stays_as_it_was() -> None:
    state = initial_state(config(tools=(), compaction=KeepTokens(tokens=1000)))
    state, _ = feed(state, [PromptSubmitted(text="x" * 40), *text("y"), ModelResponded()])
    assert state.context.counted is None
    state, _ = feed(state, [PromptSubmitted(text="x" * 40), *text("y"), done(input_tokens=9)])
    assert state.context.counted == (9, 81)


def test_keep_turns_counts_no_characters() -> None:
    state = initial_state(config(compaction=KeepTurns(turns=1)))
    state, _ = feed(state, [PromptSubmitted(text="q"), *text("a"), done(input_tokens=9)])
    assert (state.context.sent, state.context.counted) == (0, None)


def test_characters_are_counted_in_texts_calls_results_reasoning_and_images() -> None:
    from toolreel.core import ImagePart, Reasoning, ToolCall, ToolResult, ToolRound  # noqa: PLC0415
    from toolreel.core._compaction import IMAGE_CHARS  # noqa: PLC0415
    from toolreel.core._context import message_chars, request_chars, tokens_of  # noqa: PLC0415

    image = ImagePart(media_type="image/png", data=b"x")
    tool_round = ToolRound(
        assistant_text="ab",
        tool_calls=(ToolCall(id="c", name="add", arguments="{}"),),
        results=(ToolResult(call_id="c", name="add", content="3", images=(image,)),),
        reasoning=(Reasoning(text="hmm"),),
    )
    message = ChatMessage(
        role="assistant",
        content="done",
        tool_rounds=(tool_round, tool_round),
        reasoning=(Reasoning(text="so"),),
    )
    per_round = 2 + 3 + 2 + 1 + IMAGE_CHARS + 3
    assert message_chars(message) == 4 + 2 * per_round + 2
    asked = ChatMessage(role="user", content="look", images=(image, image))
    assert message_chars(asked) == 4 + 2 * IMAGE_CHARS
    cfg = config(tools=(ADD,), system_prompt="sys")
    spec = len(ADD.name) + len(ADD.description) + len(ADD.parameters)
    assert (
        request_chars(cfg, (asked, message))
        == 3 + spec + message_chars(asked) + 4 + 2 * per_round + 2
    )
    window = initial_state(cfg).context
    assert [tokens_of(window, n) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]
    counted = attrs.evolve(window, counted=(3, 8))
    assert [tokens_of(counted, n) for n in (8, 9, 16)] == [3, 4, 6]


def test_keep_tokens_leaves_out_as_few_turns_as_fit() -> None:
    state = initial_state(config(tools=(), compaction=KeepTokens(tokens=25)))
    turn: list[Event] = [PromptSubmitted(text="x" * 20), *text("y" * 20), ModelResponded()]
    state, _ = feed(state, [*turn, *turn, *turn])  # 6 messages of 5 tokens, all carried
    _, effects = feed(state, [PromptSubmitted(text="x" * 60)])  # 15 tokens: two turns go
    assert notices(effects, ContextCompacted) == [ContextCompacted(first=0, start=4, tokens=25)]


def test_keep_tokens_counts_the_pinned_messages() -> None:
    state = initial_state(config(tools=(), compaction=KeepTokens(tokens=25, pinned=2)))
    turn: list[Event] = [PromptSubmitted(text="x" * 20), *text("y" * 20), ModelResponded()]
    _, effects = feed(state, [*turn, *turn, *turn, *turn, PromptSubmitted(text="x" * 20)])
    assert notices(effects, ContextCompacted)[-1] == ContextCompacted(first=4, start=6, tokens=25)


def test_too_long_with_two_turns_carried_leaves_the_older_out() -> None:
    state, _ = session(KeepTurns(turns=10), 1)
    _, effects = feed(state, [PromptSubmitted(text="question 2"), TOO_LONG])
    assert notices(effects, ContextCompacted) == [ContextCompacted(first=0, start=2, too_long=True)]


def test_a_summary_outlives_a_later_compaction_without_one() -> None:
    state, _ = summarised_session()
    state, _ = feed(state, [*text("S1"), done(), *text("a3"), done()])
    state, _ = feed(state, [PromptSubmitted(text="question 4")])  # the next summary call
    state, effects = feed(state, [ModelCallFailed(retryable=False, message="no")])
    (request,) = requests(effects)
    assert request.messages[0].content == SUMMARY_HEADER + "S1"


def test_keep_tokens_counts_the_running_turns_rounds() -> None:
    state = initial_state(config(tools=(ADD,), compaction=KeepTokens(tokens=100)))
    turn: list[Event] = [PromptSubmitted(text="x" * 40), *text("y" * 40), ModelResponded()]
    state, effects = feed(state, [*turn, PromptSubmitted(text="x" * 40)])
    assert notices(effects, ContextCompacted) == []
    called = [*call(0, "c1", "add", ARGS), done("tool_calls", input_tokens=0)]
    _, effects = feed(state, [*called, ToolFinished(call_id="c1", output="r" * 200)])
    # the result's 200 characters take the second call past 100 tokens
    assert notices(effects, ContextCompacted) == [ContextCompacted(first=0, start=2, tokens=94)]


def test_keep_tokens_counts_the_summary_it_carries() -> None:
    state = initial_state(config(tools=(), compaction=Summarise(within=KeepTokens(tokens=60))))
    turn: list[Event] = [PromptSubmitted(text="x" * 80), *text("y" * 80), ModelResponded()]
    state, effects = feed(state, [*turn, *turn, PromptSubmitted(text="x" * 80)])
    (first,) = [e for e in of_type(effects, CallModel) if e.summary]
    assert first.iteration == 1
    state, _ = feed(state, [*text("S" * 200), ModelResponded(), *text("y" * 80), ModelResponded()])
    _, effects = feed(state, [PromptSubmitted(text="x" * 80)])
    (second,) = of_type(effects, CallModel)
    # the summary's 67 tokens leave room for the running turn alone: two turns summarised
    assert prompts(second.request.messages)[1:] == ["x" * 80, "x" * 80, DEFAULT_SUMMARY_PROMPT]


def test_too_long_is_compacted_on_the_same_model_first_then_falls_back() -> None:
    fallback = FallbackPolicy(models=("bigger",), on_context_length=True)
    state, _ = session(KeepTurns(turns=10), 4, model="small", fallback=fallback)
    state, effects = feed(state, [PromptSubmitted(text="question 5"), TOO_LONG])
    squeezed = of_type(effects, CallModel)[-1]
    assert (squeezed.model, notices(effects, ModelChanged)) == (0, [])  # rule 18 first
    state, effects = feed(state, [TOO_LONG])
    (changed,) = notices(effects, ModelChanged)
    assert (changed.previous, changed.model) == ("small", "bigger")  # then rule 8
    moved = of_type(effects, CallModel)[-1]
    assert moved.model == 1 and moved.request.model == "bigger"
    assert prompts(moved.request.messages) == ["question 3", "question 4", "question 5"]
