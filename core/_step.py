"""step(state, event) -> (state, effects): the tool-calling loop as a pure reducer.

Theory of operation
-------------------
A turn starts with a user prompt and ends with exactly one `Finish`. In
between, the loop alternates model calls and tool rounds. `step` never does
I/O: the shell carries out each effect and feeds back what happened as events.
The transitions are the read-only table `RULES` at the bottom of this module:
one handler per (phase, event type). Any other pair is a programmer error and
raises `StepError` naming both; nothing the model, a tool, a validator or the
network sends can raise. What the turn's answer is — text, or a validated
structured output — is one setting, `LoopConfig.output` (rule 17): the same
phases, rounds, hooks, approvals and budgets serve both. The machinery lives in
its own modules: the partial response (core/_response.py), argument checks
(core/_arguments.py), the round in flight (core/_round.py), its policy
(core/_loop_round.py) and approvals (core/_approval.py), what comes next once
nothing runs (core/_next.py), model calls and the end of a turn
(core/_finish.py), retries (core/_retry.py), requests (core/_model.py) and a
structured output's own words (core/_output.py).

Rules
-----
1.  A prompt starts a turn. With the UserPromptSubmit hook enabled it is asked
    once (`AskHook`); it may allow, replace the prompt, or block the turn
    (a `Finish` whose outcome is `Blocked`). Then the user message enters the history (`Persist`)
    and one `CallModel` carries the provider-neutral request. A prompt's images
    follow its text in the user message; a hook's new prompt text keeps them.
    Under `empty_prompt=CONTINUE` an empty prompt (without images) right after tool results
    (the history ends with an assistant message of rounds, no text) is a
    continuation: that message's rounds become the turn's, no user message,
    no hook; the answer completes the same message.
2.  Model events accumulate a stream: text (emitted as it arrives), reasoning
    blocks, tool calls keyed by index (id and name on the first delta only,
    argument fragments split anywhere; core/_response.py). `ModelResponded`
    ends it; a non-streamed response arrives as the same events. Empty
    arguments mean {}. A call's start is told (`ToolCallStreaming`: index, id
    and name, each start as the stream then holds it) and each non-empty
    argument fragment as it arrives (`ToolArgumentsStreamed`), so callers see
    the arguments grow before the call is announced.
3.  After the response, arguments that are not a JSON object give that call an
    error result ("arguments are not valid JSON: ...", in the fixed vocabulary
    of core/_arguments.py) and the tool never runs.
4.  A response without tool calls ends the turn: the assistant message (final
    text plus the turn's `tool_rounds`) is persisted and emitted, then
    `Finish` with outcome `Completed`.
5.  A response with tool calls opens a round: each call is announced, checked
    (unknown tool -> "Unknown tool: NAME"), and put to the PreToolUse hook
    (allow / block with reason / replace arguments; several hooks' answers
    are combined by the shell, shell/_hooks.py). All runnable calls are
    issued at once as `RunTool`; results enter the round in call order, each
    told to PostToolUse. Every call has exactly one result before the next
    `CallModel` (core/_loop_round.py; placing results: core/_round.py).
    Policies (LoopConfig; defaults first): `announce` ON_RESPONSE announces
    the calls before the hooks, AFTER_HOOKS once they decided, as they run
    (and records them so), blocked calls left out; `on_tool_blocked` ANSWER goes on after a block,
    END_TURN ends the turn `Blocked` once the round is complete;
    `error_format` TEXT or JSON (`{"error": ..., "tool": name}`) words the
    error results the loop makes.
6.  A tool failure is a result with `is_error`; the loop goes on and the model
    sees it. A timeout (`ToolTimedOut`) is answered "Tool NAME timed out after
    N s", a started call whose outcome a crash lost (`ToolInterrupted`)
    "interrupted; outcome unknown". Every result the core makes itself carries
    a `ResultReason` (unknown tool, invalid arguments, blocked, denied, not run,
    over budget, cancelled, timed out, interrupted, a structured output's own
    call), worded as `error_format` says; a tool's own output has none.
7.  Iterations (model calls) are counted; once a round of iteration
    `max_iterations` completes, the policy decides: STOP finishes `Capped`,
    RAISE finishes `Failed(MAX_ITERATIONS)`, FINAL_ANSWER makes one
    last call with `tool_choice="none"` (calls it returns anyway are dropped),
    ONE_MORE_CALL makes one more call as usual: an answer completes the turn,
    calls are announced and answered "not run", then it finishes `Capped`.
8.  A retryable `ModelCallFailed` discards the partial response and schedules
    `StartTimer` with capped exponential backoff (or the provider's
    `retry_after`), up to `retry.max_retries` (core/_retry.py); then, or when
    fatal, `Failed` with the provider's message. Completed rounds are kept.
    With a `fallback` (core/_fallback.py), a failure out of retries, or one
    with a status (or a context too long) the policy moves on for at once,
    moves the turn to the next model instead: `ModelChanged` is told and the
    same call is made through it (`CallModel.model`); when the last model
    fails, `Failed` names every model tried and why.
9.  `Cancelled` finishes `Cancelled` in any phase: completed
    rounds are kept, a round in flight is closed with "cancelled" error
    results, and late results, timers and model events are then ignored.
10. Manual mode (`auto_execute=False`): instead of `RunTool`, the runnable
    calls are requested from the caller (`ResultsRequested`); each
    `ToolFinished` answers one; then the loop continues without a new user
    message and without the UserPromptSubmit hook. A result for a call that is
    not awaited raises `StepError` naming it and the awaited ones.
11. Usage is summed per turn and per session; every `Finish` carries the
    turn's usage, iteration count and rounds.
12. Duplicate tool names are rejected when `LoopConfig` is built.
13. After a `Finish`, a new prompt continues the same history.
14. Between turns, `HistoryReplaced` sets the history (journaled like any
    event, so a replay rebuilds the same conversation); during a turn it is misuse.
15. Human approval: once a round's PreToolUse decisions are in, each runnable
    call whose tool is in `approval_required`, or that a hook answered `Ask`
    about, is held (`ApprovalRequested`, in call order, after the
    announcements). The round's other calls run as usual. When nothing but held
    calls is left, the turn pauses: `AwaitApproval` lists them, the phase is
    AWAITING_APPROVAL, and no effect is pending (the process may exit; the
    journal holds the pause). `Approved` / `Denied` decide one call each, while
    the round runs or is paused; while calls stay held a paused turn says
    `AwaitApproval` again. Once the last is decided the approved calls run (or
    are requested, in manual mode) and a denied call's result is an error whose
    content is the human's reason (none given: "The user denied this tool
    call."); then the round goes on as ever. A decision for a call that is not
    held (unknown, already decided) or when none is, is misuse (`StepError`).
    `Cancelled` answers held calls "cancelled" like any unfinished call.
16. Budgets (`LoopConfig.budget`, core/_budget.py): each response is counted
    (tokens, model calls, cost) for the turn and the session, and told
    (`UsageReported`). A model call is not made once a limit is used up; a
    response that takes tokens or cost past a limit answers its calls "not
    run: over budget: ..."; calls past a tool-call limit are answered so
    instead of running. Then the turn ends `OverBudget` (naming the limit, its
    value and the amount used), or under `on_exceeded=FINAL_ANSWER` after
    one last call without tools. A response past the limit that calls no
    tools ends the turn `OverBudget` with its answer as the text.
17. A structured output (`LoopConfig.output` a `PlainOutput` or
    `ReflectiveOutput`): the answer is the arguments of an output-tool call,
    validated. The turn makes *attempts*; `max_iterations` counts the model
    calls of one. Attempt 1 is told (`AttemptStarted`) before its first call.
    The model is offered the tools, then the output tool and, for a reflective
    output, `submit`. A plain output call is answered "Output received."; a
    reflective one is reflected (`Reflect`: the handler's text is its result);
    `submit` is answered "Output submitted for validation." once the attempt
    has an output (a call of the output tool anywhere in the same response
    counts), else "Nothing to submit: call NAME first." (without reflection,
    `submit` is a tool name like any other). PreToolUse, PostToolUse, approval
    and the budget's tool-call limits concern the tools only. The attempt's
    output is the arguments of its last valid output-tool call. When a round
    completes: `submit` in it -> `Validate` the output, or `Failed`
    (SUBMIT_BEFORE_OUTPUT) without one; a plain output call in it ->
    `Validate`; else the next model call, or at the cap `Failed`
    (MAX_ITERATIONS: no answer to fall back on, whatever `on_max_iterations`).
    A response without calls fails `INVALID_RESPONSE` (its text kept). A
    response past the budget ends the turn `OverBudget` at once, its calls
    dropped; a call refused by a tool-call limit does not end it. No final
    answer is asked for (FINAL_ANSWER policies do not apply).
    `ValidationFinished` without problems ends the turn `Produced(output)`.
    With problems: `ValidationFailed` is told; while attempts remain, the
    attempt's rounds (one assistant message) and a user message listing the
    problems join the history, and the next attempt starts; else `Failed`
    (VALIDATION_FAILED). `Finish.attempts` says where the attempts stood.
    Journals of bfd8293's agent runs hold one more fact: a PreToolUse `Ask`
    fed for a call already issued to run, which holds it (`hold_running`).
18. Compaction (`LoopConfig.compaction`, core/_compaction.py): before each
    new model call (not a retry), the policy may leave the oldest turns out of
    the request — keep the last N turns, or as many as fit a token budget —
    told as `ContextCompacted` (where the carried history now starts); the
    history itself keeps every message. The running turn, the pinned first
    messages and the system prompt are always carried; a turn is left out
    whole, so no tool call goes without its result. Under `Summarise` a
    summary call (`CallModel(summary=True)`, phase SUMMARISING) comes first:
    its text replaces the turns left out (a user message before the rest); if
    it fails they are dropped. A failure with `context_too_long` leaves out the
    older half of the carried turns and makes the call once more, once a turn
    (`on_too_long`); otherwise rule 8 applies. `HistoryReplaced` carries the
    whole new history again (core/_context.py, core/_compacting.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from ._approval import DECIDING, decide_approval, hold_running
from ._compacting import SUMMARY_ROWS, retry_squeezed
from ._compaction import WHOLE
from ._config import EmptyPromptPolicy, HookPoint, LoopConfig, PlainOutput, ReflectiveOutput
from ._context import counted
from ._effects import AskHook, Effect, Emit, Failed, FailureCode, Persist, Produced
from ._events import (
    LATE_ANSWERS,
    TOOL_OUTCOMES,
    Approved,
    Blocked,
    Cancelled,
    Denied,
    Event,
    HistoryReplaced,
    HookDecided,
    ModelCallFailed,
    ModelResponded,
    PromptSubmitted,
    ReasoningDelta,
    Replaced,
    TextDelta,
    TimerFired,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolInterrupted,
    ToolTimedOut,
    ValidationFinished,
)
from ._fallback import ModelFailure, next_model
from ._finish import (
    Step,
    call_model,
    charge,
    failed,
    finish,
    first_call,
    go_on,
    new_attempt,
    spent_on,
)
from ._loop_round import PRE_HOOK, add_result, decide_call, start_round
from ._next import Answer, next_step
from ._notices import (
    ModelChanged,
    ReasoningStreamed,
    RetryScheduled,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallStreaming,
    ToolResultReady,
    ValidationFailed,
)
from ._output import all_failed
from ._records import AttemptErrors, ChatMessage, ResultReason
from ._response import (
    EMPTY_STREAM,
    add_fragment,
    add_reasoning,
    add_text,
    call_at,
    finished_calls,
    start_call,
)
from ._retry import RetryTimer, backoff
from ._round import INTERRUPTED, awaited_position, cancel, decision_refused, not_awaited
from ._slots import blank, setters
from ._state import Phase, State, StepError, Turn, with_context, with_stream

Handler = Callable[[State, Any], Step]


def step(state: State, event: Event) -> Step:
    """Apply one event: the new state and the effects the shell must carry out.

    Pure: no I/O, no clock, no randomness; the same state and event always give the
    same result. What a model, a tool or the network sent never makes it raise.

    Args:
        state: The loop's state (`initial_state(config)` before the first prompt).
        event: What happened: a prompt, a model delta, a tool's result, a decision, ...

    Returns:
        The new state and the effects to carry out, in order (call the model, run
        tools, persist, emit, finish, ...); zero effects is a valid answer.

    Raises:
        StepError: The event cannot occur in the state's phase (the caller's misuse).
    """
    handler = _handler((state.phase, type(event)))
    if handler is None:
        raise StepError(state.phase, event)
    return handler(state, event)


def _turn(state: State) -> Turn:
    """The running turn (every phase but IDLE has one)."""
    assert state.turn is not None
    return state.turn


# Rule 1 ----------------------------------------------------------------------


def _on_prompt(state: State, event: PromptSubmitted) -> Step:
    """Start a turn, asking UserPromptSubmit first when it is enabled."""
    turn = Turn(number=state.turns + 1, prompt=event.text, images=event.images)
    aside = attrs.evolve(state.aside, after_cancel=False)
    state = attrs.evolve(state, turns=turn.number, turn=turn, aside=aside)
    resumed = None if event.images else _continued(state, event.text)
    if resumed is not None:
        state = attrs.evolve(state, history=state.history[:-1])
        turn = attrs.evolve(turn, rounds=resumed.tool_rounds, start=len(state.history))
        return first_call(state, turn)
    if HookPoint.USER_PROMPT_SUBMIT in state.config.hooks:
        ask = AskHook(
            hook_id=f"prompt:{turn.number}", point=HookPoint.USER_PROMPT_SUBMIT, prompt=event.text
        )
        return attrs.evolve(state, phase=Phase.PROMPT_HOOK), (ask,)
    return _begin(state, turn)


def _continued(state: State, text: str) -> ChatMessage | None:
    """The assistant message an empty prompt continues (`EmptyPromptPolicy.CONTINUE`), if any."""
    if text or state.config.empty_prompt is not EmptyPromptPolicy.CONTINUE or not state.history:
        return None
    last = state.history[-1]
    return last if last.role == "assistant" and not last.content and last.tool_rounds else None


def _on_history(state: State, event: HistoryReplaced) -> Step:
    """Rule 14: the caller set the conversation between turns (carried whole: rule 18)."""
    return with_context(attrs.evolve(state, history=event.history), WHOLE), ()


def _on_prompt_hook(state: State, event: HookDecided) -> Step:
    """Apply the UserPromptSubmit decision: go ahead (maybe with a new prompt) or block."""
    turn = _turn(state)
    if event.hook_id != f"prompt:{turn.number}":
        raise StepError(state.phase, event, f"awaiting hook 'prompt:{turn.number}'")
    decision = event.decision
    if isinstance(decision, Blocked):
        return finish(state, turn, decision)
    if isinstance(decision, Replaced):
        turn = attrs.evolve(turn, prompt=decision.value)
    return _begin(state, turn)


def _begin(state: State, turn: Turn) -> Step:
    """Put the user message in the history and make the first model call."""
    message = ChatMessage(role="user", content=turn.prompt, images=turn.images)
    turn = attrs.evolve(turn, start=len(state.history))
    state = attrs.evolve(state, history=(*state.history, message))
    state, effects = first_call(state, turn)
    return state, (Persist(message=message), *effects)


# Rule 2: the per-delta hot path (no `evolve`; core/_slots.py) ----------------


(_streamed,) = setters(TextStreamed)
(_emitted,) = setters(Emit)


def _text_told(text: str) -> Emit:
    """`Emit(notice=TextStreamed(text=text))`, built slot by slot (once per text delta)."""
    notice = blank(TextStreamed)
    _streamed(notice, text)
    told = blank(Emit)
    _emitted(told, notice)
    return told


def _on_text(state: State, event: TextDelta) -> Step:
    """Accumulate answer text and stream it to the caller."""
    text = event.text
    if not text:
        return state, ()
    return with_stream(state, add_text(state.stream, text)), (_text_told(text),)


def _on_reasoning(state: State, event: ReasoningDelta) -> Step:
    """Accumulate a reasoning block (kept to be sent back) and stream its text."""
    stream = add_reasoning(
        state.stream, event.text, event.signature, event.redacted, event.provider
    )
    effects = (Emit(notice=ReasoningStreamed(text=event.text)),) if event.text else ()
    return with_stream(state, stream), effects


def _on_call_started(state: State, event: ToolCallStarted) -> Step:
    """Open the tool call at its index and tell the caller it is being written."""
    index = event.index
    stream = start_call(state.stream, index, event.call_id, event.name, event.signature)
    call = call_at(stream, index)
    told = Emit(notice=ToolCallStreaming(index=index, call_id=call.call_id, name=call.name))
    return with_stream(state, stream), (told,)


(_fragment_index, _fragment_text) = setters(ToolArgumentsStreamed)


def _on_fragment(state: State, event: ToolCallArgumentsDelta) -> Step:
    """Append an argument fragment to the call at its index and stream it to the caller.

    Its `Emit(ToolArgumentsStreamed)` is built slot by slot, here: once per fragment.
    """
    fragment = event.fragment
    index = event.index
    new = with_stream(state, add_fragment(state.stream, index, fragment))
    if not fragment:
        return new, ()
    notice = blank(ToolArgumentsStreamed)
    _fragment_index(notice, index)
    _fragment_text(notice, fragment)
    told = blank(Emit)
    _emitted(told, notice)
    return new, (told,)


# Rule 2 in bulk: a replay folds a stored run of deltas at once ---------------


def text_run(state: State, texts: Sequence[str]) -> State | None:
    """The state after `step` folds a `TextDelta` of each text, when each is accepted and
    emits exactly its `Emit(TextStreamed)`; None when it must be folded one at a time.

    A replay checks a stored run of text deltas (each recorded with that one effect)
    with one string join instead of one state per delta (adapters/_fold.py).
    """
    if not texts:
        return state
    if _handler((state.phase, TextDelta)) is not _on_text or not all(texts):
        return None
    return with_stream(state, add_text(state.stream, "".join(texts)))


def fragment_run(state: State, index: int, fragments: Sequence[str]) -> State | None:
    """The state after `step` folds an argument fragment of the call at `index` for each of
    `fragments`, when each is accepted (each then emits exactly its
    `Emit(ToolArgumentsStreamed)`, none for an empty one); None when it must be folded one
    at a time.
    """
    if not fragments:
        return state
    if _handler((state.phase, ToolCallArgumentsDelta)) is not _on_fragment:
        return None
    return with_stream(state, add_fragment(state.stream, index, "".join(fragments)))


# Rules 3-5, 7, 17 ------------------------------------------------------------


def _on_responded(state: State, event: ModelResponded) -> Step:
    """The response is complete: end the turn (or the attempt), or open a round with its calls.

    Its calls are dropped after a final-answer call, and when a structured
    output's budget ran out (rules 7, 16, 17).
    """
    turn = _turn(state)
    stream = state.stream
    spent, session = spent_on(state, turn, event.usage)  # tokens, model calls, cost
    turn = attrs.evolve(turn, retry=0, spent=spent)
    state = attrs.evolve(state, stream=EMPTY_STREAM, spent=session)
    if state.config.compaction is not None:  # rule 18: the provider's count sets the rate
        state = counted(state, event.usage)
    turn, told = charge(state, turn)
    calls = finished_calls(stream, turn.scope, turn.iteration)
    dropped = turn.final_call or (state.config.structured and turn.over_budget is not None)
    if not calls or dropped:
        answer = Answer(
            text=stream.text, reasoning=stream.reasoning, finish_reason=event.finish_reason
        )
        state, effects = go_on(state, turn, next_step(state.config, turn, answer))
    else:
        state, effects = start_round(state, turn, stream.text, stream.reasoning, calls)
    return state, (*told, *effects)


def _on_tool_hook(state: State, event: HookDecided) -> Step:
    """A PreToolUse decision for one call of the round."""
    turn = _turn(state)
    assert turn.pending is not None
    for position, call in enumerate(turn.pending.calls):
        if f"{PRE_HOOK}{call.id}" == event.hook_id and event.hook_id in turn.pending.awaiting_hooks:
            return decide_call(state, turn, position, event.decision)
    awaited = sorted(turn.pending.awaiting_hooks)
    raise StepError(state.phase, event, f"awaiting hooks {awaited}")


def _on_running_ask(state: State, event: HookDecided) -> Step:
    """Rule 17's last sentence: bfd8293's agent journals hold a call already issued."""
    return hold_running(state, _turn(state), event)


# Rule 17 ---------------------------------------------------------------------


def _on_validated(state: State, event: ValidationFinished) -> Step:
    """Accept the output, or feed the problems back in a new attempt, or give up."""
    turn = _turn(state)
    if event.attempt != turn.attempt:
        raise StepError(state.phase, event, f"awaiting attempt {turn.attempt}")
    assert turn.output is not None
    if not event.problems:
        return finish(state, turn, Produced(output=turn.output))
    errors = AttemptErrors(attempt=turn.attempt, problems=event.problems)
    turn = attrs.evolve(turn, failed=(*turn.failed, errors))
    told = Emit(notice=ValidationFailed(attempt=turn.attempt, problems=event.problems))
    output = state.config.output
    assert isinstance(output, PlainOutput | ReflectiveOutput)
    max_attempts = output.max_attempts
    if turn.attempt < max_attempts:
        state, effects = new_attempt(state, turn, event.problems)
    else:
        failure = Failed(code=FailureCode.VALIDATION_FAILED, message=all_failed(max_attempts))
        state, effects = finish(state, turn, failure)
    return state, (told, *effects)


# Rules 5, 6, 10 --------------------------------------------------------------


def _on_tool_finished(state: State, event: ToolFinished | ToolTimedOut | ToolInterrupted) -> Step:
    """A tool's output or failure, or the caller's result in manual mode, for one call; a
    timeout or a lost outcome as the core words it (rule 6).

    A result for no awaited call is dropped if a cancel abandoned it, else misuse.
    """
    turn = _turn(state)
    assert turn.pending is not None
    position = awaited_position(turn.pending, event.call_id)
    if position is None and event.call_id in state.ignored_calls:
        return state, ()
    if position is None:
        raise StepError(state.phase, event, not_awaited(turn.pending, event.call_id))
    if event.__class__ is ToolFinished:  # (the usual answer: no isinstance to walk)
        finished: Any = event
        return add_result(
            state, turn, position, finished.output, finished.is_error, images=finished.images
        )
    if isinstance(event, ToolTimedOut):
        name = turn.pending.calls[position].name
        told = f"Tool {name} timed out after {event.seconds:g} s"
        return add_result(state, turn, position, told, True, reason=ResultReason.TIMED_OUT)
    lost = ResultReason.INTERRUPTED  # ToolInterrupted
    return add_result(state, turn, position, INTERRUPTED, True, reason=lost)


# Rule 15 ---------------------------------------------------------------------


def _on_decision(state: State, event: Approved | Denied) -> Step:
    """A human's decision on one call held for approval; any other is misuse."""
    turn = state.turn
    held = turn.pending.approvals if turn and turn.pending and state.phase in DECIDING else ()
    if (refused := decision_refused(held, event.call_id)) is not None:
        raise StepError(state.phase, event, refused)
    assert turn is not None
    return decide_approval(state, turn, event)


# Rule 8 ----------------------------------------------------------------------


def _timer(turn: Turn) -> RetryTimer:
    """The backoff timer before the next retry of the turn's current model call."""
    return RetryTimer(
        scope=turn.scope, iteration=turn.iteration, retry=turn.retry + 1, model=turn.model
    )


def _on_failed(state: State, event: ModelCallFailed) -> Step:
    """Retry a retryable failure after a backoff, or fall back to the next model, else
    finish FAILED (naming every model tried, after a fallback); a context too long is
    compacted and the call made once more first (rule 18)."""
    turn = _turn(state)
    state = attrs.evolve(state, stream=EMPTY_STREAM)
    if event.context_too_long and (squeezed := retry_squeezed(state, turn)) is not None:
        return squeezed
    config = state.config
    timer = backoff(config.retry, turn.retry, event, _timer(turn))
    moved = next_model(config.fallback, turn.model, event, timer is not None)
    if moved is not None:
        return _fall_back(state, turn, event, moved)
    if timer is not None:
        notice = RetryScheduled(
            retry=turn.retry + 1, seconds=timer.seconds, message=event.message, status=event.status
        )
        state = attrs.evolve(state, phase=Phase.BACKING_OFF)
        return state, (Emit(notice=notice), timer)
    tried = (*turn.tried, _failure(config, turn, event)) if turn.tried else ()
    return finish(state, turn, failed(event, tried))


def _failure(config: LoopConfig, turn: Turn, event: ModelCallFailed) -> ModelFailure:
    """How the turn's current model failed, for the record of the models tried."""
    model = config.model_at(turn.model)
    return ModelFailure(model=model, message=event.message, status=event.status, retries=turn.retry)


def _fall_back(state: State, turn: Turn, event: ModelCallFailed, index: int) -> Step:
    """Move the turn to model `index`, say so, and make the same call through it at once."""
    failure = _failure(state.config, turn, event)
    turn = attrs.evolve(turn, model=index, tried=(*turn.tried, failure))  # call_model: retry 0
    notice = ModelChanged(
        model=state.config.model_at(index),
        index=index,
        previous=failure.model,
        message=event.message,
        status=event.status,
    )
    state, effects = call_model(state, turn, again=True)
    return state, (Emit(notice=notice), *effects)


def _on_timer(state: State, event: TimerFired) -> Step:
    """The backoff elapsed: repeat the same model call."""
    turn = _turn(state)
    expected = _timer(turn)
    if event.token != expected.token:
        raise StepError(state.phase, event, expected.awaited())
    return call_model(state, turn, retry=turn.retry + 1)


# Rule 9 ----------------------------------------------------------------------


def _on_cancel(state: State, event: Cancelled) -> Step:
    """Finish CANCELLED, keeping completed rounds and closing the one in flight."""
    turn = _turn(state)
    notices: tuple[Effect, ...] = ()
    if turn.pending is not None:
        closed, made = cancel(turn.pending)
        turn = attrs.evolve(turn, rounds=(*turn.rounds, closed))  # (`finish` drops the turn)
        notices = tuple(Emit(notice=ToolResultReady(result=result)) for result in made)
        abandoned = frozenset(result.call_id for result in made)
        aside = attrs.evolve(state.aside, ignored_calls=state.ignored_calls | abandoned)
        state = attrs.evolve(state, aside=aside)
    state, effects = finish(state, turn, event)
    return state, (*notices, *effects)


def _nothing(state: State, event: Event) -> Step:
    """Nothing to do (cancel while idle)."""
    return state, ()


def _late(state: State, event: Event) -> Step:
    """After a cancel, stragglers of the cancelled turn are dropped; otherwise misuse."""
    if state.after_cancel or (
        isinstance(event, ToolFinished | ToolTimedOut | ToolInterrupted)
        and event.call_id in state.ignored_calls
    ):
        return state, ()
    raise StepError(state.phase, event)


# The transition table --------------------------------------------------------

_TURN_PHASES = tuple(phase for phase in Phase if phase is not Phase.IDLE)

#: Rules 1-10, 14 and 17: the transitions of a turn, and the history set between turns.
_RULE_ROWS: dict[tuple[Phase, type], Handler] = {
    (Phase.IDLE, PromptSubmitted): _on_prompt,
    (Phase.IDLE, HistoryReplaced): _on_history,
    (Phase.PROMPT_HOOK, HookDecided): _on_prompt_hook,
    (Phase.STREAMING, TextDelta): _on_text,
    (Phase.STREAMING, ReasoningDelta): _on_reasoning,
    (Phase.STREAMING, ToolCallStarted): _on_call_started,
    (Phase.STREAMING, ToolCallArgumentsDelta): _on_fragment,
    (Phase.STREAMING, ModelResponded): _on_responded,
    (Phase.STREAMING, ModelCallFailed): _on_failed,
    (Phase.BACKING_OFF, TimerFired): _on_timer,
    (Phase.TOOL_HOOKS, HookDecided): _on_tool_hook,
    **{
        (phase, kind): _on_tool_finished
        for phase in (Phase.RUNNING_TOOLS, Phase.AWAITING_RESULTS)
        for kind in TOOL_OUTCOMES
    },
    (Phase.VALIDATING, ValidationFinished): _on_validated,
    (Phase.RUNNING_TOOLS, HookDecided): _on_running_ask,
}

#: Rule 9: a cancel finishes the turn in any phase of one; while idle it does nothing.
_CANCEL_ROWS: dict[tuple[Phase, type], Handler] = {
    (Phase.IDLE, Cancelled): _nothing,
    **{(phase, Cancelled): _on_cancel for phase in _TURN_PHASES},
}

#: Rule 9: the answers a cancelled turn may still receive, once idle: dropped after a cancel.
_IGNORED_WHEN_IDLE: dict[tuple[Phase, type], Handler] = {
    (Phase.IDLE, kind): _late for kind in (*LATE_ANSWERS, HookDecided)
}

#: Rule 9: a result for a call a cancel abandoned, arriving in a later turn, is dropped.
_ABANDONED_RESULTS: dict[tuple[Phase, type], Handler] = {
    (phase, kind): _late
    for phase in _TURN_PHASES
    if phase not in (Phase.RUNNING_TOOLS, Phase.AWAITING_RESULTS)
    for kind in TOOL_OUTCOMES
}

#: Rule 15: a decision is taken while the round runs or is paused; elsewhere it is misuse,
#: said by `_on_decision` with what awaits approval.
_DECISION_ROWS: dict[tuple[Phase, type], Handler] = {
    (phase, kind): _on_decision for phase in Phase for kind in (Approved, Denied)
}

#: The loop's transitions, read-only: (phase, event type) -> handler.
RULES: Mapping[tuple[Phase, type], Handler] = MappingProxyType(
    {
        **_RULE_ROWS,
        **SUMMARY_ROWS,
        **_CANCEL_ROWS,
        **_IGNORED_WHEN_IDLE,
        **_ABANDONED_RESULTS,
        **_DECISION_ROWS,
    }
)
_handler = RULES.get
