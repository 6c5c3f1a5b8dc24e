"""Rule 17 of core/_step.py: a turn whose answer is a structured output (an agent run),
one group per point of the rule: event lists in, whole effect tuples out.

`said(effects)` keeps what an agent run said before the one reducer (its executions,
validations, timers, pauses, attempt notices and `Finish`): the loop's notices and
`Persist`, which every turn tells, are specified by the loop's own tests.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from toolreel.adapters._providers._expand import ModelTurn, ResultsTurn, UserTurn, expand
from toolreel.core import (
    CallModel,
    Cancelled,
    ChatMessage,
    Effect,
    Emit,
    Finish,
    LoopConfig,
    ModelCallFailed,
    ModelRequest,
    ModelResponded,
    Phase,
    PlainOutput,
    PromptSubmitted,
    Reasoning,
    ReasoningDelta,
    Reflect,
    ReflectiveOutput,
    ResultReason,
    RunTool,
    StartTimer,
    State,
    StepError,
    TextDelta,
    TimerFired,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolResult,
    ToolRound,
    ToolSpec,
    Usage,
    Validate,
    ValidationFinished,
    initial_state,
    step,
)
from toolreel.core._config import SUBMIT_TOOL
from toolreel.core._model import so_far
from toolreel.core.notices import AttemptStarted, ValidationFailed
from toolreel.core.outcomes import AttemptErrors, Attempts, Failed, FailureCode, Produced
from toolreel.core.policies import RetryPolicy

RECORD = ToolSpec(
    name="record_invoice",
    description="Record the invoice",
    parameters={
        "type": "object",
        "properties": {"number": {"type": "string"}, "total": {"type": "number"}},
        "required": ["number", "total"],
    },
)
RATE = ToolSpec(name="currency_rate", description="Euros per unit of a currency")
PROMPT = ChatMessage(role="user", content="Extract the invoice: INV-1, 2 x 50 USD")
USAGE = Usage(input_tokens=10, output_tokens=5)
INVOICE = '{"number": "INV-1", "total": 100}'
FIXED = '{"number": "INV-1", "total": 92}'


def plain(max_attempts: int = 3, **overrides: Any) -> LoopConfig:
    """A structured turn with the currency tool and a plain output tool (15 calls an attempt)."""
    overrides.setdefault("model", "test-model")
    overrides.setdefault("tools", (RATE,))
    overrides.setdefault("max_iterations", 15)
    return LoopConfig(output=PlainOutput(tool=RECORD, max_attempts=max_attempts), **overrides)


def reflective(max_attempts: int = 3, **overrides: Any) -> LoopConfig:
    """A structured turn with the currency tool and a reflective output tool (so `submit`)."""
    overrides.setdefault("model", "test-model")
    overrides.setdefault("tools", (RATE,))
    overrides.setdefault("max_iterations", 15)
    return LoopConfig(output=ReflectiveOutput(tool=RECORD, max_attempts=max_attempts), **overrides)


def response(*calls: tuple[str, str, str], text: str = "", usage: Usage = USAGE) -> list[Any]:
    """A streamed response: text, then each (id, name, arguments) call in fragments."""
    events: list[Any] = [TextDelta(text=text)] if text else []
    for index, (call_id, name, arguments) in enumerate(calls):
        events.append(ToolCallStarted(index=index, call_id=call_id, name=name))
        middle = len(arguments) // 2
        for fragment in (arguments[:middle], arguments[middle:]):
            events.append(ToolCallArgumentsDelta(index=index, fragment=fragment))
    events.append(ModelResponded(finish_reason="tool_calls" if calls else "stop", usage=usage))
    return events


def said(effects: tuple[Effect, ...] | list[Effect]) -> tuple[Effect, ...]:
    """The effects an agent run said before the one reducer (module docstring)."""
    return tuple(
        effect
        for effect in effects
        if not isinstance(effect, Emit)
        or isinstance(effect.notice, AttemptStarted | ValidationFailed)
        if type(effect).__name__ not in ("Persist", "TellHook")
    )


def fold(state: State, events: list[Any]) -> tuple[State, list[tuple[Effect, ...]]]:
    """Feed events one by one; the final state and what each step said."""
    per_step = []
    for event in events:
        state, effects = step(state, event)
        per_step.append(said(effects))
    return state, per_step


def run(config: LoopConfig, events: list[Any]) -> tuple[State, tuple[Effect, ...]]:
    """Start with the prompt, fold `events`; the final state and what the last step said."""
    state, per_step = fold(initial_state(config), [PromptSubmitted(text=PROMPT.content)])
    state, per_step = fold(state, events)
    return state, per_step[-1] if per_step else ()


def everything(config: LoopConfig, events: list[Any]) -> list[Effect]:
    """Everything a run said from its prompt, in order."""
    _, per_step = fold(initial_state(config), [PromptSubmitted(text=PROMPT.content), *events])
    return [effect for effects in per_step for effect in effects]


def request(config: LoopConfig, *messages: ChatMessage) -> ModelRequest:
    """The request the run should send for `messages`."""
    return ModelRequest(
        model=config.model, system=config.system_prompt, messages=messages, tools=config.offered
    )


def ok(call_id: str, name: str, content: str, reason: ResultReason | None = None) -> ToolResult:
    return ToolResult(call_id=call_id, name=name, content=content, reason=reason)


def error(call_id: str, name: str, content: str, reason: ResultReason | None = None) -> ToolResult:
    return ToolResult(call_id=call_id, name=name, content=content, is_error=True, reason=reason)


OUTPUT, UNKNOWN = ResultReason.OUTPUT, ResultReason.UNKNOWN_TOOL


def tool_round(calls: list[ToolCall], results: list[ToolResult], text: str = "") -> ToolRound:
    return ToolRound(assistant_text=text, tool_calls=tuple(calls), results=tuple(results))


def assistant(*rounds: ToolRound, text: str = "") -> ChatMessage:
    return ChatMessage(role="assistant", content=text, tool_rounds=rounds)


def turn_of(state: State) -> Any:
    """The running turn."""
    assert state.turn is not None
    return state.turn


RATE_CALL = ToolCall(id="r1", name="currency_rate", arguments='{"currency": "USD"}')
RECORD_CALL = ToolCall(id="o1", name="record_invoice", arguments=INVOICE)
SUBMIT_CALL = ToolCall(id="s1", name="submit", arguments="{}")


def attempts(number: int = 1, iteration: int = 1, **fields: Any) -> Attempts:
    return Attempts(number=number, iteration=iteration, **fields)


# Attempt 1 starts with the prompt -----------------------------------------------------------


def test_prompt_starts_attempt_one_with_a_notice_then_one_model_call() -> None:
    cfg = plain(system_prompt="You extract invoices.")
    state, effects = step(initial_state(cfg), PromptSubmitted(text=PROMPT.content))
    assert said(effects) == (
        Emit(notice=AttemptStarted(attempt=1)),
        CallModel(request=request(cfg, PROMPT), iteration=1),
    )
    assert effects[-1].request.system == "You extract invoices."
    turn = turn_of(state)
    assert (state.phase, turn.attempt, turn.iteration) == (Phase.STREAMING, 1, 1)
    assert state.history == (PROMPT,)  # the prompt is the conversation's first message


def test_plain_output_offers_the_tools_and_the_output_tool_but_no_submit() -> None:
    assert [spec.name for spec in plain().offered] == ["currency_rate", "record_invoice"]


def test_reflective_output_injects_the_submit_tool_as_specified() -> None:
    assert [spec.name for spec in reflective().offered] == [
        "currency_rate",
        "record_invoice",
        "submit",
    ]
    assert reflective().offered[-1] == SUBMIT_TOOL
    assert SUBMIT_TOOL.name == "submit"
    assert SUBMIT_TOOL.description == (
        "Submit your final output for validation. "
        "Call this when you are satisfied with your output."
    )
    assert SUBMIT_TOOL.parameters == '{"properties":{},"type":"object"}'


# The response is accumulated as in every turn -----------------------------------------------


def test_arguments_split_anywhere_are_reassembled_by_index() -> None:
    _, effects = run(
        plain(),
        [
            ToolCallStarted(index=0, call_id="r1", name="currency_rate"),
            ToolCallStarted(index=1, call_id="r2", name="currency_rate"),
            ToolCallArgumentsDelta(index=1, fragment='{"currency": "G'),
            ToolCallArgumentsDelta(index=0, fragment='{"curr'),
            ToolCallArgumentsDelta(index=0, fragment='ency": "USD"}'),
            ToolCallArgumentsDelta(index=1, fragment='BP"}'),
            ModelResponded(finish_reason="tool_calls"),
        ],
    )
    assert effects == (
        RunTool(call=RATE_CALL),
        RunTool(call=ToolCall(id="r2", name="currency_rate", arguments='{"currency": "GBP"}')),
    )


def test_text_and_reasoning_before_the_calls_stay_with_their_round() -> None:
    cfg = plain()
    events = [
        ReasoningDelta(text="USD first", signature="sig"),
        *response(("r1", "currency_rate", RATE_CALL.arguments), text="Checking the rate."),
        ToolFinished(call_id="r1", output="0.92"),
    ]
    _, effects = run(cfg, events)
    expected = attrs.evolve(
        tool_round([RATE_CALL], [ok("r1", "currency_rate", "0.92")], text="Checking the rate."),
        reasoning=(Reasoning(text="USD first", signature="sig"),),
    )
    assert effects == (CallModel(request=request(cfg, PROMPT, assistant(expected)), iteration=2),)


# A response without any tool call --------------------------------------------------------------


def test_response_without_tool_calls_fails_invalid_response_and_keeps_its_text() -> None:
    cfg = plain()
    state, effects = run(cfg, response(text="The total is 100 USD."))
    answer = ChatMessage(role="assistant", content="The total is 100 USD.")
    assert effects == (
        Finish(
            outcome=Failed(
                code=FailureCode.INVALID_RESPONSE,
                message="the model answered without calling a tool (expected record_invoice)",
            ),
            rounds=(),
            iterations=1,
            usage=USAGE,
            attempts=attempts(),
        ),
    )
    assert state.history == (PROMPT, answer)
    assert state.phase is Phase.IDLE


# Every call gets exactly one result, in call order -------------------------------------------


def test_tools_run_and_plain_output_calls_are_answered_at_once() -> None:
    cfg = plain()
    _, effects = run(
        cfg,
        response(
            ("r1", "currency_rate", RATE_CALL.arguments),
            ("o1", "record_invoice", INVOICE),
            ("r2", "currency_rate", '{"currency": "GBP"}'),
        ),
    )
    assert effects == (
        RunTool(call=RATE_CALL),
        RunTool(call=ToolCall(id="r2", name="currency_rate", arguments='{"currency": "GBP"}')),
    )


def test_arguments_that_are_not_a_json_object_get_an_error_and_never_run() -> None:
    cfg = plain()
    _, effects = run(
        cfg, response(("r1", "currency_rate", '{"currency": "US'), ("o1", "record_invoice", "[1]"))
    )
    bad_rate = ToolCall(id="r1", name="currency_rate", arguments='{"currency": "US')
    bad_record = ToolCall(id="o1", name="record_invoice", arguments="[1]")
    [call] = effects
    assert isinstance(call, CallModel)
    [message] = call.request.messages[1:]
    [only] = message.tool_rounds
    assert only.tool_calls == (bad_rate, bad_record)
    assert [result.is_error for result in only.results] == [True, True]
    assert only.results[0].content.startswith("arguments are not valid JSON:")
    assert only.results[1].content == ("arguments are not valid JSON: expected an object, got list")


def test_unknown_tool_gets_an_error_result_and_the_model_is_called_again() -> None:
    cfg = plain()
    _, effects = run(cfg, response(("x1", "web_search", "{}")))
    unknown = ToolCall(id="x1", name="web_search")
    expected = tool_round(
        [unknown], [error("x1", "web_search", "Unknown tool: web_search", UNKNOWN)]
    )
    assert effects == (CallModel(request=request(cfg, PROMPT, assistant(expected)), iteration=2),)


def test_submit_is_an_unknown_tool_without_reflection() -> None:
    cfg = plain()
    _, effects = run(cfg, response(("s1", "submit", "{}")))
    expected = tool_round([SUBMIT_CALL], [error("s1", "submit", "Unknown tool: submit", UNKNOWN)])
    assert effects == (CallModel(request=request(cfg, PROMPT, assistant(expected)), iteration=2),)


def test_reflective_output_calls_are_reflected_alongside_the_tools() -> None:
    _, effects = run(
        reflective(),
        response(("r1", "currency_rate", RATE_CALL.arguments), ("o1", "record_invoice", INVOICE)),
    )
    assert effects == (RunTool(call=RATE_CALL), Reflect(call=RECORD_CALL))


# Tool and reflection failures are results ------------------------------------------------------


def test_tool_and_reflection_failures_are_error_results_the_model_reads() -> None:
    cfg = reflective()
    _, effects = run(
        cfg,
        [
            *response(
                ("r1", "currency_rate", RATE_CALL.arguments), ("o1", "record_invoice", INVOICE)
            ),
            ToolFinished(call_id="o1", output="ValueError: no lines", is_error=True),
            ToolFinished(call_id="r1", output="KeyError: 'USD'", is_error=True),
        ],
    )
    expected = tool_round(
        [RATE_CALL, RECORD_CALL],
        [
            error("r1", "currency_rate", "KeyError: 'USD'"),
            error("o1", "record_invoice", "ValueError: no lines"),
        ],
    )
    assert effects == (CallModel(request=request(cfg, PROMPT, assistant(expected)), iteration=2),)


def test_a_result_for_no_awaited_call_is_misuse_naming_phase_and_awaited_calls() -> None:
    state, _ = run(plain(), response(("r1", "currency_rate", RATE_CALL.arguments)))
    with pytest.raises(StepError, match=r"phase=RUNNING_TOOLS.*'zz'.*\['r1'\]"):
        step(state, ToolFinished(call_id="zz", output="?"))


# How an attempt ends -----------------------------------------------------------------------


def test_each_iteration_is_one_assistant_message_and_one_results_message() -> None:
    cfg = reflective()
    state, effects = run(
        cfg,
        [
            *response(("r1", "currency_rate", RATE_CALL.arguments), ("r2", "currency_rate", "{}")),
            ToolFinished(call_id="r2", output="1.0"),
            ToolFinished(call_id="r1", output="0.92"),
            *response(("o1", "record_invoice", INVOICE)),
            ToolFinished(call_id="o1", output="INV-1: 100.00"),
        ],
    )
    [call] = effects
    turns = list(expand(call.request.messages))
    assert [type(turn) for turn in turns] == [
        UserTurn,
        ModelTurn,
        ResultsTurn,
        ModelTurn,
        ResultsTurn,
    ]
    assert [len(turn.calls) for turn in turns[1:]] == [2, 2, 1, 1]
    assert [r.content for r in turns[2].results] == ["0.92", "1.0"]  # call order, not arrival
    assert so_far(state.history, turn_of(state).rounds) == call.request.messages


def test_plain_output_ends_the_attempt_after_the_other_calls_and_the_last_call_wins() -> None:
    cfg = plain()
    events = response(
        ("o1", "record_invoice", INVOICE),
        ("r1", "currency_rate", RATE_CALL.arguments),
        ("o2", "record_invoice", FIXED),
    )
    state, effects = run(cfg, events)
    assert effects == (RunTool(call=RATE_CALL),)
    state, effects = step(state, ToolFinished(call_id="r1", output="0.92"))
    assert said(effects) == (Validate(output=FIXED, attempt=1),)
    [only] = turn_of(state).rounds
    assert only.results == (
        ok("o1", "record_invoice", "Output received.", OUTPUT),
        ok("r1", "currency_rate", "0.92"),
        ok("o2", "record_invoice", "Output received.", OUTPUT),
    )
    assert state.phase is Phase.VALIDATING


def test_reflective_output_twice_then_submit_validates_the_last_output() -> None:
    cfg = reflective()
    second = ToolCall(id="o2", name="record_invoice", arguments=FIXED)
    state, per_step = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text=PROMPT.content),
            *response(("o1", "record_invoice", INVOICE)),
            ToolFinished(call_id="o1", output="INV-1 total 100 — lines add up to 92"),
            *response(("o2", "record_invoice", FIXED)),
            ToolFinished(call_id="o2", output="INV-1 total 92"),
            *response(("s1", "submit", "{}")),
        ],
    )
    effects = [effect for effects in per_step for effect in effects]
    assert [e for e in effects if isinstance(e, Reflect)] == [
        Reflect(call=RECORD_CALL),
        Reflect(call=second),
    ]
    assert per_step[-1] == (Validate(output=FIXED, attempt=1),)
    assert turn_of(state).rounds[-1].results == (
        ok("s1", "submit", "Output submitted for validation.", OUTPUT),
    )


def test_reflective_outputs_in_one_response_are_all_reflected_and_the_last_one_wins() -> None:
    cfg = reflective()
    state, effects = run(
        cfg,
        response(
            ("o1", "record_invoice", INVOICE),
            ("o2", "record_invoice", FIXED),
            ("s1", "submit", "{}"),
        ),
    )
    second = ToolCall(id="o2", name="record_invoice", arguments=FIXED)
    assert effects == (Reflect(call=RECORD_CALL), Reflect(call=second))
    state, _ = step(state, ToolFinished(call_id="o2", output="total 92"))
    _, effects = step(state, ToolFinished(call_id="o1", output="total 100"))
    assert said(effects) == (Validate(output=FIXED, attempt=1),)


def test_submit_before_any_output_fails_submit_before_output() -> None:
    cfg = reflective()
    state, effects = run(cfg, response(("s1", "submit", "{}")))
    refused = error("s1", "submit", "Nothing to submit: call record_invoice first.", OUTPUT)
    submitted = tool_round([SUBMIT_CALL], [refused])
    assert effects == (
        Finish(
            outcome=Failed(
                code=FailureCode.SUBMIT_BEFORE_OUTPUT,
                message="submit was called before any call of record_invoice",
            ),
            rounds=(submitted,),
            iterations=1,
            usage=USAGE,
            attempts=attempts(),
        ),
    )
    assert state.history == (PROMPT, assistant(submitted))


def test_submit_with_an_output_later_in_the_same_response_validates_that_output() -> None:
    state, effects = run(
        reflective(),
        [
            *response(("s1", "submit", "{}"), ("o1", "record_invoice", INVOICE)),
            ToolFinished(call_id="o1", output="shown"),
        ],
    )
    assert effects == (Validate(output=INVOICE, attempt=1),)


def test_max_iterations_fails_with_its_context_and_runs_no_validation() -> None:
    cfg = plain(max_iterations=2)
    events = [
        *response(("r1", "currency_rate", RATE_CALL.arguments)),
        ToolFinished(call_id="r1", output="0.92"),
        *response(("r2", "currency_rate", "{}")),
        ToolFinished(call_id="r2", output="1.0"),
    ]
    state, per_step = fold(initial_state(cfg), [PromptSubmitted(text=PROMPT.content), *events])
    effects = [effect for effects in per_step for effect in effects]
    assert not [e for e in effects if isinstance(e, Validate)]
    assert len([e for e in effects if isinstance(e, CallModel)]) == 2
    finish = effects[-1]
    assert isinstance(finish, Finish)
    assert finish.outcome == Failed(
        code=FailureCode.MAX_ITERATIONS,
        message="attempt 1 reached max_iterations_per_attempt=2 without producing an output",
    )
    assert (finish.attempts, finish.iterations, finish.usage) == (
        attempts(iteration=2),
        2,
        USAGE + USAGE,
    )
    assert len(state.history[-1].tool_rounds) == 2  # every call answered


def test_every_text_turn_policy_of_the_cap_is_a_failure_for_a_structured_output() -> None:
    from toolreel.core.policies import MaxIterationsPolicy  # noqa: PLC0415 - this test's alone

    for policy in MaxIterationsPolicy:
        cfg = plain(max_iterations=1, on_max_iterations=policy)
        effects = everything(
            cfg,
            [*response(("r1", "currency_rate", "{}")), ToolFinished(call_id="r1", output="1")],
        )
        assert effects[-1].outcome.code is FailureCode.MAX_ITERATIONS, policy


# Validation -------------------------------------------------------------------------------


def test_a_valid_output_finishes_the_turn_with_it() -> None:
    cfg = plain()
    state, effects = run(
        cfg, [*response(("o1", "record_invoice", INVOICE)), ValidationFinished(attempt=1)]
    )
    received = tool_round([RECORD_CALL], [ok("o1", "record_invoice", "Output received.", OUTPUT)])
    assert effects == (
        Finish(
            outcome=Produced(output=INVOICE),
            rounds=(received,),
            iterations=1,
            usage=USAGE,
            attempts=attempts(validating=True),
        ),
    )
    assert state.history == (PROMPT, assistant(received))
    assert effects[0].text == INVOICE


def test_failed_validation_feeds_the_problems_back_in_a_new_attempt() -> None:
    cfg = plain()
    problems = ("$.total: lines add up to 92, not 100",)
    state, effects = run(
        cfg,
        [
            *response(("o1", "record_invoice", INVOICE)),
            ValidationFinished(attempt=1, problems=problems),
        ],
    )
    received = tool_round([RECORD_CALL], [ok("o1", "record_invoice", "Output received.", OUTPUT)])
    feedback = ChatMessage(
        role="user",
        content="Your output failed validation (attempt 1 of 3):\n"
        "- $.total: lines add up to 92, not 100\n"
        "Call record_invoice again with a corrected output.",
    )
    assert effects == (
        Emit(notice=ValidationFailed(attempt=1, problems=problems)),
        Emit(notice=AttemptStarted(attempt=2)),
        CallModel(request=request(cfg, PROMPT, assistant(received), feedback), iteration=1),
    )
    turn = turn_of(state)
    assert (turn.attempt, turn.iteration, turn.iterations, turn.output) == (2, 1, 2, None)
    assert state.history == (PROMPT, assistant(received), feedback)


def test_reflective_feedback_asks_for_submit_again() -> None:
    _, effects = run(
        reflective(),
        [
            *response(("o1", "record_invoice", INVOICE), ("s1", "submit", "{}")),
            ToolFinished(call_id="o1", output="shown"),
            ValidationFinished(attempt=1, problems=("bad",)),
        ],
    )
    feedback = effects[-1].request.messages[-1]
    assert feedback.content.endswith(
        "Call record_invoice again with a corrected output, then call submit."
    )


def test_an_output_from_an_earlier_attempt_cannot_be_submitted_again() -> None:
    _, effects = run(
        reflective(max_attempts=2),
        [
            *response(("o1", "record_invoice", INVOICE), ("s1", "submit", "{}")),
            ToolFinished(call_id="o1", output="shown"),
            ValidationFinished(attempt=1, problems=("bad",)),
            *response(("s2", "submit", "{}")),
        ],
    )
    assert effects[-1].outcome.code is FailureCode.SUBMIT_BEFORE_OUTPUT
    assert effects[-1].attempts.failed == (AttemptErrors(attempt=1, problems=("bad",)),)


def test_validation_failing_in_every_attempt_fails_with_every_attempts_errors() -> None:
    cfg = plain(max_attempts=2)
    events = [
        *response(("o1", "record_invoice", INVOICE)),
        ValidationFinished(attempt=1, problems=("total is wrong",)),
        *response(("o2", "record_invoice", FIXED)),
        ValidationFinished(attempt=2, problems=("number is wrong", "total is wrong")),
    ]
    state, effects = run(cfg, events)
    failed, finish = effects
    assert failed == Emit(
        notice=ValidationFailed(attempt=2, problems=("number is wrong", "total is wrong"))
    )
    assert finish.outcome == Failed(
        code=FailureCode.VALIDATION_FAILED,
        message="the output failed validation in all 2 attempt(s)",
    )
    assert finish.attempts == Attempts(
        number=2,
        iteration=1,
        failed=(
            AttemptErrors(attempt=1, problems=("total is wrong",)),
            AttemptErrors(attempt=2, problems=("number is wrong", "total is wrong")),
        ),
        validating=True,
    )
    assert [m.role for m in state.history] == ["user", "assistant", "user", "assistant"]


def test_a_validation_for_another_attempt_is_misuse() -> None:
    state, _ = run(plain(), response(("o1", "record_invoice", INVOICE)))
    with pytest.raises(StepError, match=r"phase=VALIDATING.*awaiting attempt 1"):
        step(state, ValidationFinished(attempt=2))


# Provider failures ------------------------------------------------------------------------


def test_a_retryable_failure_backs_off_and_repeats_the_same_iteration() -> None:
    cfg = plain(retry=RetryPolicy(max_retries=2, base_delay=1.0))
    state, per_step = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text=PROMPT.content),
            TextDelta(text="Let me"),
            ModelCallFailed(retryable=True, message="HTTP 429: slow down", status=429),
            TimerFired(token="retry:1:1:1"),
        ],
    )
    assert per_step[2] == (StartTimer(token="retry:1:1:1", seconds=1.0),)
    assert per_step[3] == (CallModel(request=request(cfg, PROMPT), iteration=1, retry=1),)
    assert state.stream.text == ""  # the partial response was discarded
    assert turn_of(state).iterations == 1


def test_a_retry_timer_names_the_attempt() -> None:
    cfg = plain(retry=RetryPolicy(max_retries=2, base_delay=1.0))
    effects = everything(
        cfg,
        [
            *response(("o1", "record_invoice", INVOICE)),
            ValidationFinished(attempt=1, problems=("bad",)),
            ModelCallFailed(retryable=True, message="HTTP 503", status=503),
        ],
    )
    assert effects[-1] == StartTimer(token="retry:2:1:1", seconds=1.0)


def test_a_fatal_failure_fails_with_the_providers_message_and_status() -> None:
    state, effects = run(
        plain(), [ModelCallFailed(retryable=False, message="HTTP 401: bad key", status=401)]
    )
    assert effects == (
        Finish(
            outcome=Failed(code=FailureCode.MODEL_ERROR, message="HTTP 401: bad key", status=401),
            rounds=(),
            iterations=1,
            usage=Usage(),
            attempts=attempts(),
        ),
    )
    assert state.history == (PROMPT,)


def test_retries_exhausted_fail_with_the_last_failure() -> None:
    cfg = plain(retry=RetryPolicy(max_retries=1))
    failure = ModelCallFailed(retryable=True, message="HTTP 503", status=503)
    _, effects = run(cfg, [failure, TimerFired(token="retry:1:1:1"), failure])
    assert effects[-1].outcome.code is FailureCode.RETRIES_EXHAUSTED


def test_a_timer_for_another_call_is_misuse() -> None:
    state, _ = run(plain(), [ModelCallFailed(retryable=True, message="HTTP 503")])
    with pytest.raises(StepError, match=r"phase=BACKING_OFF.*retry:1:1:1"):
        step(state, TimerFired(token="retry:9:9:9"))


# Cancellation -----------------------------------------------------------------------------


def test_cancel_before_a_model_call_ends_cancelled_where_the_attempt_stood() -> None:
    cfg = plain()
    events = [
        *response(("r1", "currency_rate", RATE_CALL.arguments)),
        ToolFinished(call_id="r1", output="0.92"),
    ]
    state, effects = run(cfg, [*events, Cancelled()])
    rate_round = tool_round([RATE_CALL], [ok("r1", "currency_rate", "0.92")])
    assert effects == (
        Finish(
            outcome=Cancelled(),
            rounds=(rate_round,),
            iterations=2,
            usage=USAGE,
            attempts=attempts(iteration=2),
        ),
    )
    assert state.history == (PROMPT, assistant(rate_round))


def test_cancel_while_tools_run_closes_the_round_and_drops_late_results() -> None:
    state, _ = run(
        reflective(),
        [
            *response(
                ("r1", "currency_rate", RATE_CALL.arguments), ("o1", "record_invoice", INVOICE)
            ),
            ToolFinished(call_id="o1", output="shown"),
            Cancelled(),
        ],
    )
    assert state.history[-1].tool_rounds[-1].results == (
        error("r1", "currency_rate", "Cancelled before the tool finished.", ResultReason.CANCELLED),
        ok("o1", "record_invoice", "shown"),
    )
    for late in (ToolFinished(call_id="r1", output="0.92"), TextDelta(text="x"), Cancelled()):
        assert step(state, late) == (state, ())


def test_cancel_while_validating_says_so() -> None:
    state, effects = run(plain(), [*response(("o1", "record_invoice", INVOICE)), Cancelled()])
    assert effects[-1].attempts == attempts(validating=True)
    assert step(state, ValidationFinished(attempt=1)) == (state, ())


def test_events_after_a_turn_that_was_not_cancelled_are_misuse() -> None:
    state, _ = run(plain(), response(text="no tools"))
    with pytest.raises(StepError, match=r"TextDelta.*phase=IDLE"):
        step(state, TextDelta(text="more"))


def test_an_event_impossible_in_the_phase_raises_naming_phase_and_event() -> None:
    with pytest.raises(StepError, match=r"ToolFinished.*phase=IDLE"):
        step(initial_state(plain()), ToolFinished(call_id="c", output="x"))


# Usage ------------------------------------------------------------------------------------


def test_usage_accumulates_across_iterations_and_attempts() -> None:
    first, second, third = (Usage(input_tokens=n, output_tokens=n // 10) for n in (100, 250, 400))
    events = [
        *response(("r1", "currency_rate", RATE_CALL.arguments), usage=first),
        ToolFinished(call_id="r1", output="0.92"),
        *response(("o1", "record_invoice", INVOICE), usage=second),
        ValidationFinished(attempt=1, problems=("total is wrong",)),
        *response(("o2", "record_invoice", FIXED), usage=third),
        ValidationFinished(attempt=2),
    ]
    _, effects = run(plain(), events)
    [finish] = effects
    assert finish.usage == Usage(input_tokens=750, output_tokens=75)
    assert (finish.attempts.number, finish.iterations) == (2, 3)


# Executions are exactly RunTool and Reflect ------------------------------------------------


def test_refused_and_answered_calls_are_not_executions() -> None:
    effects = everything(
        reflective(),
        response(
            ("x1", "web_search", "{}"),
            ("r1", "currency_rate", "not json"),
            ("s1", "submit", "{}"),
            ("o1", "record_invoice", INVOICE),
        ),
    )
    assert [e for e in effects if isinstance(e, RunTool | Reflect)] == [Reflect(call=RECORD_CALL)]


# The config -------------------------------------------------------------------------------


def test_duplicate_tool_names_are_rejected_submit_included() -> None:
    with pytest.raises(ValueError, match="Duplicate tool name: currency_rate"):
        plain(tools=(RATE, RATE))
    with pytest.raises(ValueError, match="Duplicate tool name: record_invoice"):
        plain(tools=(RECORD,))
    plain(tools=(SUBMIT_TOOL,))  # without reflection, "submit" is an ordinary name
    with pytest.raises(ValueError, match="Duplicate tool name: submit"):
        reflective(tools=(SUBMIT_TOOL,))


def test_limits_and_tool_choice_are_checked() -> None:
    with pytest.raises(ValueError):
        plain(max_attempts=0)
    with pytest.raises(ValueError):
        plain(max_iterations=0)
    with pytest.raises(ValueError, match="tool_choice"):
        plain(tool_choice="none")
    with pytest.raises(ValueError, match="tool_choice"):
        plain(tool_choice="currency_rate")
    assert run(plain(tool_choice="required"), [])[0].phase is Phase.STREAMING
