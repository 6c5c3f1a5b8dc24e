"""Budgets (core/_budget.py, rule 16 of core/_step.py): event lists in, effects out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loop import call, config, done, notices, of_type, run, text

from toolreel.adapters.records import config_data, config_of, effect_data, get_converter
from toolreel.core import (
    CallModel,
    ConfigError,
    Effect,
    Finish,
    LoopConfig,
    Persist,
    PlainOutput,
    PromptSubmitted,
    RunTool,
    State,
    ToolFinished,
    ToolSpec,
    Usage,
    Validate,
    initial_state,
    step,
)
from toolreel.core._history import unanswered_calls
from toolreel.core.budget import Budget, BudgetPolicy, BudgetScope, OverBudget, Price, Spending
from toolreel.core.notices import ToolResultReady, UsageReported
from toolreel.core.outcomes import FinishReason

ADD_ARGS = '{"a": 1, "b": 2}'


def budgeted(**limits: object) -> object:
    """A config (tools `add`, `weather_lookup`; model `test-model`) with this budget."""
    return config(budget=Budget(**limits), max_iterations=10)  # type: ignore[arg-type]


def finish_of(effects: list[Effect]) -> Finish:
    """The one `Finish` of a turn."""
    (finish,) = of_type(effects, Finish)
    return finish


def two_adds(first: str = "c1", second: str = "c2") -> list:
    """A response calling `add` twice."""
    return [*call(0, first, "add", ADD_ARGS), *call(1, second, "add", ADD_ARGS)]


# --- model calls --------------------------------------------------------------------------


def test_a_budget_of_zero_model_calls_ends_the_turn_before_calling_the_model() -> None:
    state, effects = run(budgeted(max_model_calls=0), [PromptSubmitted(text="hi")])
    over = OverBudget(limit_name="model_calls", limit=0, used=0)
    assert of_type(effects, CallModel) == []
    assert of_type(effects, Persist)[0].message.role == "user"
    assert finish_of(effects).outcome == over
    assert finish_of(effects).reason is FinishReason.OVER_BUDGET
    assert over.message == "over budget: model_calls limit 0 per turn, used 0"
    assert state.turn is None


def test_the_model_call_past_the_limit_is_not_made_and_the_round_before_it_is_kept() -> None:
    events = [PromptSubmitted(text="add"), *call(0, "c1", "add", ADD_ARGS), done("tool_calls")]
    events.append(ToolFinished(call_id="c1", output="3"))
    state, effects = run(budgeted(max_model_calls=1), events)
    assert len(of_type(effects, CallModel)) == 1
    finish = finish_of(effects)
    assert finish.outcome == OverBudget(limit_name="model_calls", limit=1, used=1)
    assert [r.results[0].content for r in finish.rounds] == ["3"]
    assert unanswered_calls(state.history) == ()


# --- tokens and cost ----------------------------------------------------------------------


def test_a_response_past_the_token_limit_answers_its_calls_not_run_and_ends_the_turn() -> None:
    events = [PromptSubmitted(text="add"), *two_adds(), done("tool_calls", 80, 40)]
    state, effects = run(budgeted(max_total_tokens=100), events)
    assert of_type(effects, RunTool) == []
    results = [n.result for n in notices(effects, ToolResultReady)]
    message = "not run: over budget: total_tokens limit 100 per turn, used 120"
    assert [(r.call_id, r.content, r.is_error) for r in results] == [
        ("c1", message, True),
        ("c2", message, True),
    ]
    assert finish_of(effects).outcome == OverBudget(limit_name="total_tokens", limit=100, used=120)
    assert len(of_type(effects, CallModel)) == 1
    assert unanswered_calls(state.history) == ()


@pytest.mark.parametrize(
    ("limit", "used", "tokens"),
    [("max_input_tokens", 80, (80, 5)), ("max_output_tokens", 40, (5, 40))],
)
def test_input_and_output_tokens_have_limits_of_their_own(limit, used, tokens) -> None:
    events = [PromptSubmitted(text="add"), *two_adds(), done("tool_calls", *tokens)]
    _, effects = run(budgeted(**{limit: 30}), events)
    name = limit.removeprefix("max_")
    assert finish_of(effects).outcome == OverBudget(limit_name=name, limit=30, used=used)


def test_an_answer_past_the_limit_is_kept_as_the_over_budget_outcomes_text() -> None:
    events = [PromptSubmitted(text="hi"), *text("Hello", "!"), done("stop", 90, 30)]
    state, effects = run(budgeted(max_total_tokens=100), events)
    finish = finish_of(effects)
    assert finish.outcome == OverBudget(
        limit_name="total_tokens", limit=100, used=120, text="Hello!", model_finish_reason="stop"
    )
    assert finish.text == "Hello!"
    assert state.history[-1].content == "Hello!"


def test_a_response_exactly_at_the_limit_is_within_it_but_no_further_call_is_made() -> None:
    events = [PromptSubmitted(text="add"), *call(0, "c1", "add", ADD_ARGS), done("t", 60, 40)]
    events.append(ToolFinished(call_id="c1", output="3"))
    _, effects = run(budgeted(max_total_tokens=100), events)
    assert len(of_type(effects, RunTool)) == 1
    assert len(of_type(effects, CallModel)) == 1
    assert finish_of(effects).outcome == OverBudget(limit_name="total_tokens", limit=100, used=100)


def test_cost_is_priced_per_model_and_a_cost_limit_ends_the_turn() -> None:
    price = Price(input_per_million=2.0, output_per_million=10.0)
    cfg = budgeted(max_cost=0.001, prices={"test-model": price})
    events = [PromptSubmitted(text="add"), *two_adds(), done("tool_calls", 300, 50)]
    _, effects = run(cfg, events)
    (reported,) = notices(effects, UsageReported)
    assert reported.turn.cost == pytest.approx(0.0011)
    outcome = finish_of(effects).outcome
    assert (outcome.limit_name, outcome.limit) == ("cost_usd", 0.001)
    assert outcome.used == pytest.approx(0.0011)
    assert outcome.message == "over budget: cost_usd limit 0.001 per turn, used 0.0011"


# --- tool calls ---------------------------------------------------------------------------


def test_a_budget_of_zero_tool_calls_refuses_every_call() -> None:
    events = [PromptSubmitted(text="add"), *two_adds(), done("tool_calls")]
    state, effects = run(budgeted(max_tool_calls=0), events)
    assert of_type(effects, RunTool) == []
    contents = {n.result.content for n in notices(effects, ToolResultReady)}
    assert contents == {"not run: over budget: tool_calls limit 0 per turn, used 2"}
    assert finish_of(effects).outcome == OverBudget(limit_name="tool_calls", limit=0, used=2)
    assert unanswered_calls(state.history) == ()


def test_calls_past_the_tool_call_limit_are_refused_in_call_order_and_the_others_run() -> None:
    events = [PromptSubmitted(text="add"), *two_adds(), done("tool_calls")]
    events.append(ToolFinished(call_id="c1", output="3"))
    state, effects = run(budgeted(max_tool_calls=1), events)
    assert [effect.call.id for effect in of_type(effects, RunTool)] == ["c1"]
    (tool_round,) = finish_of(effects).rounds
    assert [(r.call_id, r.is_error) for r in tool_round.results] == [("c1", False), ("c2", True)]
    assert len(of_type(effects, CallModel)) == 1
    assert finish_of(effects).outcome == OverBudget(limit_name="tool_calls", limit=1, used=2)
    assert state.spent.tool_calls == (("add", 1),)


def test_a_per_tool_limit_refuses_only_that_tools_calls() -> None:
    weather = call(1, "c2", "weather_lookup", '{"city": "Oslo"}')
    events = [PromptSubmitted(text="go"), *call(0, "c1", "add", ADD_ARGS), *weather]
    events.append(done("tool_calls"))
    _, effects = run(budgeted(max_calls_per_tool={"add": 0}), events)
    assert [effect.call.name for effect in of_type(effects, RunTool)] == ["weather_lookup"]
    (refused,) = [n.result for n in notices(effects, ToolResultReady)]
    assert refused.content == "not run: over budget: tool_calls[add] limit 0 per turn, used 1"


def test_manual_mode_asks_only_for_the_calls_the_budget_admits() -> None:
    events = [PromptSubmitted(text="add"), *two_adds(), done("tool_calls")]
    cfg = config(budget=Budget(max_tool_calls=0), auto_execute=False)
    state, effects = run(cfg, events)
    assert finish_of(effects).reason is FinishReason.OVER_BUDGET
    assert unanswered_calls(state.history) == ()


# --- the final-answer policy --------------------------------------------------------------


def test_final_answer_makes_one_last_call_without_tools_and_keeps_its_answer() -> None:
    cfg = budgeted(max_tool_calls=0, on_exceeded=BudgetPolicy.FINAL_ANSWER)
    events = [PromptSubmitted(text="add"), *call(0, "c1", "add", ADD_ARGS), done("tool_calls")]
    events += [*text("About 3."), done("stop")]
    _, effects = run(cfg, events)
    first, last = of_type(effects, CallModel)
    assert (first.request.tool_choice, last.request.tool_choice) == ("auto", "none")
    finish = finish_of(effects)
    assert finish.outcome == OverBudget(
        limit_name="tool_calls", limit=0, used=1, text="About 3.", model_finish_reason="stop"
    )


def test_final_answer_is_not_asked_for_when_model_calls_ran_out() -> None:
    cfg = budgeted(max_model_calls=1, on_exceeded="final_answer")
    events = [PromptSubmitted(text="add"), *call(0, "c1", "add", ADD_ARGS), done("tool_calls")]
    events.append(ToolFinished(call_id="c1", output="3"))
    _, effects = run(cfg, events)
    assert len(of_type(effects, CallModel)) == 1
    assert finish_of(effects).outcome.limit_name == "model_calls"


# --- usage so far, scope ------------------------------------------------------------------


def test_each_response_reports_what_the_turn_and_the_session_spent() -> None:
    events = [PromptSubmitted(text="add"), *call(0, "c1", "add", ADD_ARGS), done("t", 10, 5)]
    events += [ToolFinished(call_id="c1", output="3"), *text("3"), done("stop", 20, 2)]
    events += [PromptSubmitted(text="again"), *text("3"), done("stop", 30, 1)]
    _, effects = run(budgeted(), events)
    reported = notices(effects, UsageReported)
    assert [n.turn.usage for n in reported] == [
        Usage(input_tokens=10, output_tokens=5),
        Usage(input_tokens=30, output_tokens=7),
        Usage(input_tokens=30, output_tokens=1),
    ]
    assert [n.session.model_calls for n in reported] == [1, 2, 3]
    assert reported[-1].session == Spending(
        usage=Usage(input_tokens=60, output_tokens=8), model_calls=3, tool_calls=(("add", 1),)
    )


def test_a_session_budget_counts_every_turn_and_a_turn_budget_starts_afresh() -> None:
    first = [PromptSubmitted(text="hi"), *text("a"), done("stop", 50, 10)]
    second = [PromptSubmitted(text="again")]
    _, effects = run(budgeted(max_total_tokens=60, scope=BudgetScope.SESSION), first + second)
    finishes = of_type(effects, Finish)
    assert finishes[1].outcome == OverBudget(
        limit_name="total_tokens", limit=60, used=60, scope=BudgetScope.SESSION
    )
    assert len(of_type(effects, CallModel)) == 1
    _, effects = run(budgeted(max_total_tokens=60), first + second)
    assert len(of_type(effects, CallModel)) == 2


def test_without_a_budget_nothing_is_reported_but_spending_is_counted() -> None:
    events = [PromptSubmitted(text="hi"), *text("a"), done("stop", 5, 1)]
    state, effects = run(config(), events)
    assert notices(effects, UsageReported) == []
    assert state.spent == Spending(usage=Usage(input_tokens=5, output_tokens=1), model_calls=1)


# --- bad budgets --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field",
    [
        "max_input_tokens",
        "max_output_tokens",
        "max_total_tokens",
        "max_tool_calls",
        "max_model_calls",
    ],
)
@pytest.mark.parametrize("value", [-1, True, 1.5, "3"])
def test_a_limit_that_is_not_a_count_is_a_config_error_naming_it(field, value) -> None:
    with pytest.raises(ConfigError) as caught:
        Budget(**{field: value})
    assert caught.value.field == field


def test_a_negative_per_tool_limit_or_cost_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"max_calls_per_tool\['add'\]"):
        Budget(max_calls_per_tool={"add": -1})
    with pytest.raises(ConfigError, match="max_cost"):
        Budget(max_cost=-0.5, prices={"m": Price(input_per_million=1, output_per_million=1)})
    with pytest.raises(ConfigError, match="input_per_million"):
        Price(input_per_million=-1, output_per_million=1)


def test_a_per_tool_limit_on_a_tool_the_session_lacks_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="a configured tool's name"):
        config(budget=Budget(max_calls_per_tool={"serach": 1}))


def test_a_cost_limit_needs_a_price_and_one_for_the_sessions_model() -> None:
    with pytest.raises(ConfigError, match="prices"):
        Budget(max_cost=1.0)
    other = {"other-model": Price(input_per_million=1, output_per_million=1)}
    with pytest.raises(ConfigError, match="a Price for the model 'test-model'"):
        config(budget=Budget(max_cost=1.0, prices=other))


def test_zero_limits_are_valid() -> None:
    budget = Budget(max_total_tokens=0, max_tool_calls=0, max_model_calls=0)
    _, effects = run(config(budget=budget), [PromptSubmitted(text="hi")])
    assert finish_of(effects).outcome.limit_name == "model_calls"


# --- journal ------------------------------------------------------------------------------


def test_the_outcome_and_the_budget_serialise_and_read_back() -> None:
    events = [PromptSubmitted(text="add"), *two_adds(), done("tool_calls", 80, 40)]
    price = Price(input_per_million=1, output_per_million=2)
    cfg = budgeted(
        max_total_tokens=100, prices={"test-model": price}, max_calls_per_tool={"add": 3}
    )
    _, effects = run(cfg, events)
    converter = get_converter()
    for effect in effects:
        data = effect_data(effect)
        assert converter.structure(data, Effect) == effect
    assert config_of(config_data(cfg)) == cfg
    old = {key: value for key, value in config_data(cfg).items() if key != "budget"}
    assert config_of(old).budget is None


# --- the property -------------------------------------------------------------------------


@st.composite
def rounds(draw: st.DrawFn) -> list[tuple[int, int, int]]:
    """Responses: (calls, input tokens, output tokens) each; a response without calls ends."""
    return draw(
        st.lists(
            st.tuples(st.integers(0, 3), st.integers(0, 60), st.integers(0, 30)),
            min_size=1,
            max_size=8,
        )
    )


def _drive(cfg: object, responses: list[tuple[int, int, int]]) -> list[Effect]:
    """Answer every effect as a model and tools would, responses in order, until `Finish`."""
    from toolreel.core import initial_state, step  # noqa: PLC0415

    state = initial_state(cfg)  # type: ignore[arg-type]
    state, effects = step(state, PromptSubmitted(text="go"))
    out = list(effects)
    queue = list(responses)
    pending = list(effects)
    while pending:
        effect = pending.pop(0)
        events = []
        if isinstance(effect, CallModel):
            calls, tokens_in, tokens_out = queue.pop(0) if queue else (0, 1, 1)
            for index in range(calls):
                call_id = f"{effect.iteration}-{index}"
                events += call(index, call_id, "add", ADD_ARGS)
            events.append(done("tool_calls" if calls else "stop", tokens_in, tokens_out))
        elif isinstance(effect, RunTool):
            events.append(ToolFinished(call_id=effect.call.id, output="3"))
        for event in events:
            state, more = step(state, event)
            out += more
            pending += more
    return out


@settings(max_examples=150, deadline=None)
@given(
    responses=rounds(),
    max_total=st.integers(0, 150),
    max_calls=st.integers(0, 4),
    max_tools=st.integers(0, 6),
    policy=st.sampled_from(list(BudgetPolicy)),
)
def test_a_turn_overruns_tokens_by_at_most_one_response_and_never_runs_more_tools(
    responses, max_total, max_calls, max_tools, policy
) -> None:
    budget = Budget(
        max_total_tokens=max_total,
        max_model_calls=max_calls,
        max_tool_calls=max_tools,
        on_exceeded=policy,
    )
    effects = _drive(config(budget=budget, max_iterations=20), responses)
    finish = finish_of(effects)
    made = of_type(effects, CallModel)
    assert len(made) <= max_calls
    assert len(of_type(effects, RunTool)) <= max_tools
    reported = [n.turn.usage.total_tokens for n in notices(effects, UsageReported)]
    # Only the last response may pass it (FINAL_ANSWER: the one that did, and the answer).
    allowed = 2 if policy is BudgetPolicy.FINAL_ANSWER else 1
    assert all(used < max_total for used in reported[:-allowed])
    assert len([effect for effect in made if effect.request.tool_choice == "none"]) <= 1
    if finish.reason is not FinishReason.OVER_BUDGET:
        assert finish.usage.total_tokens <= max_total


# --- a structured output (rule 17 of core/_step.py: the turn is the run) -------------------

RECORD = ToolSpec(name="record", description="The output")
RATE = ToolSpec(name="rate", description="A tool")


def structured_run(budget: Budget, events: list) -> tuple[State, list]:
    """Fold a structured turn's events from the start under `budget`; state and every effect."""
    config = LoopConfig(output=PlainOutput(tool=RECORD), tools=(RATE,), model="m", budget=budget)
    state = initial_state(config)
    effects: list = []
    for event in [PromptSubmitted(text="go"), *events]:
        state, more = step(state, event)
        effects += more
    return state, effects


def test_a_structured_turn_with_zero_model_calls_ends_over_budget_before_calling() -> None:
    _, effects = structured_run(Budget(max_model_calls=0), [])
    assert of_type(effects, CallModel) == []
    (finish,) = of_type(effects, Finish)
    assert finish.outcome == OverBudget(limit_name="model_calls", limit=0, used=0)


def test_a_structured_response_past_the_token_limit_ends_the_turn_and_drops_its_calls() -> None:
    events = [*call(0, "r1", "rate", "{}"), done("tool_calls", 90, 20)]
    state, effects = structured_run(Budget(max_total_tokens=100), events)
    assert of_type(effects, RunTool) == []
    (finish,) = of_type(effects, Finish)
    assert finish.outcome.message == "over budget: total_tokens limit 100 per turn, used 110"
    assert unanswered_calls(state.history) == ()
    assert state.history[-1].tool_rounds == ()  # the calls are dropped, not answered


def test_a_structured_turns_tool_past_its_limit_is_answered_not_run_and_the_output_counts() -> None:
    events = [*call(0, "r1", "rate", "{}"), *call(1, "r2", "rate", "{}")]
    events += [*call(2, "o1", "record", '{"n": 1}'), done("tool_calls")]
    events.append(ToolFinished(call_id="r1", output="1.1"))
    _, effects = structured_run(Budget(max_tool_calls=1), events)
    assert [effect.call.id for effect in of_type(effects, RunTool)] == ["r1"]
    assert of_type(effects, Validate) == [Validate(output='{"n": 1}', attempt=1)]


def test_a_final_answer_is_not_asked_of_a_structured_turn() -> None:
    budget = Budget(max_total_tokens=100, on_exceeded=BudgetPolicy.FINAL_ANSWER)
    events = [*call(0, "r1", "rate", "{}"), done("tool_calls", 90, 20)]
    _, effects = structured_run(budget, events)
    assert [effect.request.tool_choice for effect in of_type(effects, CallModel)] == ["auto"]
    assert isinstance(of_type(effects, Finish)[0].outcome, OverBudget)


def test_a_structured_budget_naming_a_tool_it_lacks_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="max_calls_per_tool"):
        LoopConfig(output=PlainOutput(tool=RECORD), budget=Budget(max_calls_per_tool={"x": 1}))
