"""The round policy: refuse what cannot run, ask PreToolUse, hold for approval,
dispatch, tell PostToolUse, and close the round.

The round's bookkeeping (placing results in call order, completing, cancelling)
is in core/_round.py; what is decided here: which calls are answered without
running (rule 3, "Unknown tool"; rule 17, a structured output's own calls),
the PreToolUse decisions (rule 5), auto or manual dispatch (rule 10), which
calls are held for human approval (rule 15; the decisions: core/_approval.py),
the budget's tool-call limits at dispatch (rule 16, core/_budget.py). Once
nothing runs, `next_step` (core/_next.py) decides what comes next. Hooks,
approvals and budgets concern the configured tools: a structured output's tool
and `submit` are never hooked, held or counted.
"""

from __future__ import annotations

import json

import attrs

from ._arguments import arguments_error
from ._budget import admit, refusal_text, spent_tools
from ._config import AnnouncePolicy, BlockedCallPolicy, ErrorFormat, HookPoint
from ._content import ImagePart
from ._effects import AskHook, Effect, Emit, Reflect, RunTool, TellHook
from ._events import Ask, Blocked, Decision, Replaced
from ._finish import Step, go_on, scoped
from ._next import next_step
from ._notices import (
    ApprovalRequested,
    ResultsRequested,
    RoundFinished,
    ToolCallAnnounced,
    ToolResultReady,
)
from ._output import (
    OUTPUT_RECEIVED,
    SUBMITTED,
    is_submit,
    nothing_to_submit,
    outputs,
    received,
    reflected,
)
from ._records import Reasoning, ResultReason, ToolCall, ToolResult
from ._round import (
    PendingRound,
    awaiting,
    complete,
    error_result,
    hold,
    is_complete,
    open_round,
    place,
    position_of,
    replace,
    runnable,
)
from ._state import Phase, State, Turn

#: The prefix of a PreToolUse question's `hook_id`: "pre:<call id>".
PRE_HOOK = "pre:"
#: What the model reads of a call a PreToolUse hook blocked, before the hook's reason.
BLOCKED = "Tool call blocked: "


def blocked_text(reason: str) -> str:
    """The text of a call a PreToolUse hook blocked with `reason`."""
    return f"{BLOCKED}{reason}"


def error(state: State, call: ToolCall, message: str, reason: ResultReason) -> ToolResult:
    """An error result the loop makes, worded as `error_format` says."""
    if state.config.error_format is ErrorFormat.JSON:
        message = json.dumps({"error": message, "tool": call.name})
    return error_result(call, message, reason)


def _answered(call: ToolCall, content: str) -> ToolResult:
    """A structured output's own call, answered by the core (rule 17)."""
    return ToolResult(call_id=call.id, name=call.name, content=content, reason=ResultReason.OUTPUT)


def _refusal(state: State, turn: Turn, call: ToolCall, has_output: bool) -> ToolResult | None:
    """The result of a call that does not run (invalid arguments, unknown tool, past cap,
    over budget; rule 17: `submit`, a plain output call), or None: it runs (or is reflected).

    `has_output`: the attempt has an output, or this response calls the output tool.
    """
    config = state.config
    output = config.output
    if config.structured and is_submit(output, call):
        if has_output:
            return _answered(call, SUBMITTED)
        return error(state, call, nothing_to_submit(output), ResultReason.OUTPUT)
    if turn.past_cap:
        limit = state.config.max_iterations
        message = f"not run: max_tool_iterations ({limit}) reached"
        return error(state, call, message, ResultReason.NOT_RUN)
    if turn.over_budget is not None:
        return error(state, call, refusal_text(turn.over_budget), ResultReason.OVER_BUDGET)
    problem = arguments_error(call.arguments)
    if problem is not None:
        return error(state, call, problem, ResultReason.INVALID_ARGUMENTS)
    if call.name in config.tool_names:
        return None
    if received(output, call):
        return _answered(call, OUTPUT_RECEIVED)
    if reflected(output, call):
        return None
    return error(state, call, f"Unknown tool: {call.name}", ResultReason.UNKNOWN_TOOL)


def _announced(turn: Turn, calls: tuple[ToolCall, ...]) -> list[Effect]:
    """A `ToolCallAnnounced` notice per call."""
    return [Emit(notice=ToolCallAnnounced(call=call, iteration=turn.iteration)) for call in calls]


def _pre_hook(call: ToolCall) -> AskHook:
    """Ask PreToolUse about one call."""
    return AskHook(hook_id=f"{PRE_HOOK}{call.id}", point=HookPoint.PRE_TOOL_USE, call=call)


def start_round(
    state: State,
    turn: Turn,
    text: str,
    reasoning: tuple[Reasoning, ...],
    calls: tuple[ToolCall, ...],
) -> Step:
    """Announce every call, answer those that cannot run, then ask hooks or dispatch.

    Under `AnnouncePolicy.AFTER_HOOKS` a round whose calls go to PreToolUse is
    announced once the decisions are in (`_dispatch`).
    """
    config = state.config
    output = config.output
    has_output = config.structured and (turn.output is not None or bool(outputs(output, calls)))
    refusals = tuple(_refusal(state, turn, call, has_output) for call in calls)
    pending = open_round(text, reasoning, calls, refusals)
    asking = HookPoint.PRE_TOOL_USE in config.hooks
    hooked = runnable(pending) if asking else ()
    asks = [_pre_hook(call) for call in hooked if not reflected(output, call)]
    later = bool(asks) and config.announce is AnnouncePolicy.AFTER_HOOKS
    effects = [] if later else _announced(turn, calls)
    effects += [Emit(notice=ToolResultReady(result=result)) for result in refusals if result]
    if asks:
        pending = attrs.evolve(pending, awaiting_hooks=frozenset(ask.hook_id for ask in asks))
        turn = attrs.evolve(turn, pending=pending)
        return attrs.evolve(state, phase=Phase.TOOL_HOOKS, turn=turn), (*effects, *asks)
    state, more = _dispatch(state, attrs.evolve(turn, pending=pending))
    return state, (*effects, *more)


def decide_call(state: State, turn: Turn, position: int, decision: Decision) -> Step:
    """Apply a PreToolUse decision to the call at `position`; dispatch once all are in."""
    pending = turn.pending
    assert pending is not None
    call = pending.calls[position]
    run: ToolCall | None = pending.runs[position]
    result: ToolResult | None = None
    blocked, approvals = pending.blocked, pending.approvals
    match decision:  # `Allowed`, and an `Ask` that keeps the arguments: the call as it is
        case Blocked(reason=reason):
            result = error(state, call, blocked_text(reason), ResultReason.BLOCKED)
            blocked = blocked | {call.id}
            if state.config.on_tool_blocked is BlockedCallPolicy.END_TURN:
                turn = attrs.evolve(turn, block_reason=turn.block_reason or reason)
        case Replaced(value=arguments) | Ask(value=str(arguments)):
            problem = arguments_error(arguments)
            if problem is None:
                run = attrs.evolve(call, arguments=arguments)
            else:
                message = f"hook replaced the {problem}"
                result = error(state, call, message, ResultReason.INVALID_ARGUMENTS)
    if isinstance(decision, Ask) and result is None and run is not None:
        # held: `hold` takes its run away at dispatch; it runs once approved (`decide_approval`)
        approvals = (*approvals, ApprovalRequested(call=run, reason=decision.reason))
    effects: tuple[Effect, ...] = ()
    if result is not None:
        run = None
        effects = (Emit(notice=ToolResultReady(result=result)),)
    pending = attrs.evolve(
        pending,
        runs=replace(pending.runs, position, run),
        results=replace(pending.results, position, result),
        awaiting_hooks=pending.awaiting_hooks - {f"{PRE_HOOK}{call.id}"},
        blocked=blocked,
        approvals=approvals,
    )
    turn = attrs.evolve(turn, pending=pending)
    if pending.awaiting_hooks:
        return attrs.evolve(state, turn=turn), effects
    state, more = _dispatch(state, turn, announce=state.config.announce)
    return state, (*effects, *more)


def _as_ran(pending: PendingRound, but: frozenset[str] = frozenset()) -> tuple[ToolCall, ...]:
    """AFTER_HOOKS: the round's calls with the arguments they run with, but the ids in `but`."""
    held = {request.call.id: request.call for request in pending.approvals}
    return tuple(
        run or held.get(call.id, call)
        for call, run in zip(pending.calls, pending.runs, strict=True)
        if call.id not in but
    )


def _dispatch(
    state: State, turn: Turn, *, announce: AnnouncePolicy = AnnouncePolicy.ON_RESPONSE
) -> Step:
    """Issue every runnable call at once (auto), or ask the caller for them (manual).

    `announce=AFTER_HOOKS` (the hooks have just decided): announce the round first.
    """
    assert turn.pending is not None
    pending = hold(state.config.approval_required, turn.pending)
    if pending is not turn.pending:  # some calls are held
        turn = attrs.evolve(turn, pending=pending)
    told: list[Effect] = []
    if announce is AnnouncePolicy.AFTER_HOOKS:
        told = _announced(turn, _as_ran(pending, but=pending.blocked))
    told += [Emit(notice=request) for request in pending.approvals]
    state, effects = run_or_request(state, turn, runnable(pending))
    return state, (*told, *effects)


def run_or_request(state: State, turn: Turn, calls: tuple[ToolCall, ...]) -> Step:
    """`RunTool` for each of `calls` (auto) or `ResultsRequested` (manual); `Reflect` for a
    reflective output's calls (rule 17).

    The budget admits the calls first (rule 16): those it refuses get their
    result now. None left to run: the round closes or pauses (`settle`), or,
    when calls of the round still run, waits for them.
    """
    state, turn, refused, calls = _admitted(state, turn, calls)
    assert turn.pending is not None
    if not calls:
        if not awaiting(turn.pending):
            state, settled = settle(state, turn)
            return state, (*refused, *settled)
        # approved calls were all refused while others of the round still run
        return attrs.evolve(state, turn=turn), refused
    output = state.config.output
    if not state.config.structured and state.config.auto_execute:  # a chat's: the usual
        effects: tuple[Effect, ...] = tuple(RunTool(call=call) for call in calls)
        phase = Phase.RUNNING_TOOLS
    elif state.config.auto_execute:
        effects = tuple(
            Reflect(call=call) if reflected(output, call) else RunTool(call=call) for call in calls
        )
        phase = Phase.RUNNING_TOOLS
    else:
        tools = tuple(call for call in calls if not reflected(output, call))
        effects = tuple(Reflect(call=call) for call in calls if reflected(output, call))
        phase = Phase.RUNNING_TOOLS
        if tools:
            effects = (*effects, Emit(notice=ResultsRequested(calls=tools)))
            phase = Phase.AWAITING_RESULTS
    return attrs.evolve(state, phase=phase, turn=turn), (*refused, *effects)


def _admitted(
    state: State, turn: Turn, calls: tuple[ToolCall, ...]
) -> tuple[State, Turn, tuple[Effect, ...], tuple[ToolCall, ...]]:
    """Count the `calls` the budget admits; answer the others (rule 16); the admitted calls.

    A structured output's reflected calls are no tool calls: always admitted,
    never counted. A call refused in a structured turn does not end it: the
    model may still give its output.
    """
    budget = state.config.budget
    if budget is None:
        return state, turn, (), calls
    pending = turn.pending
    assert pending is not None
    output = state.config.output
    tools = tuple(call for call in calls if not reflected(output, call))
    if not tools:
        return state, turn, (), calls
    runs, results = list(pending.runs), list(pending.results)
    told: list[Effect] = []
    refused: set[str] = set()
    for call, over in zip(tools, admit(budget, scoped(state, turn), tools), strict=True):
        if over is None:
            continue
        position = position_of(pending, call.id)
        made = pending.calls[position]
        result = error(state, made, refusal_text(over), ResultReason.OVER_BUDGET)
        runs[position], results[position] = None, result
        told.append(Emit(notice=ToolResultReady(result=result)))
        refused.add(call.id)
        if not state.config.structured:
            turn = attrs.evolve(turn, over_budget=turn.over_budget or over)
    pending = attrs.evolve(pending, runs=tuple(runs), results=tuple(results))
    ran = tuple(call for call in tools if call.id not in refused)
    turn = attrs.evolve(turn, pending=pending, spent=spent_tools(turn.spent, ran))
    state = attrs.evolve(state, spent=spent_tools(state.spent, ran))
    return state, turn, tuple(told), tuple(call for call in calls if call.id not in refused)


def add_result(
    state: State,
    turn: Turn,
    position: int,
    output: str,
    is_error: bool,
    *,
    images: tuple[ImagePart, ...] = (),
    reason: ResultReason | None = None,
) -> Step:
    """Record the result of the call at `position`, tell PostToolUse; close the round once full.

    `reason`: the core words this result (a timeout, a lost outcome), as `error_format` says.
    """
    assert turn.pending is not None
    run = turn.pending.runs[position]
    assert run is not None  # only a call that runs awaits a result (`awaited_position`)
    if reason is not None and state.config.error_format is ErrorFormat.JSON:
        output = json.dumps({"error": output, "tool": run.name})
    pending, result = place(turn.pending, position, output, is_error, images=images, reason=reason)
    effects: list[Effect] = [Emit(notice=ToolResultReady(result=result))]
    told = HookPoint.POST_TOOL_USE in state.config.hooks
    if told and not reflected(state.config.output, run):
        effects.append(TellHook(call=run, result=result))
    turn = attrs.evolve(turn, pending=pending)
    if not is_complete(pending) and (not pending.approvals or awaiting(pending)):
        return attrs.evolve(state, turn=turn), tuple(effects)  # calls of the round still run
    state, more = settle(state, turn)
    return state, (*effects, *more)


def settle(state: State, turn: Turn) -> Step:
    """Nothing of the round runs: close it once every call has its result, then go on as
    `next_step` says (only held calls left: it pauses the turn)."""
    assert turn.pending is not None
    if is_complete(turn.pending):
        return close_round(state, turn)
    return go_on(state, turn, next_step(state.config, turn))


def close_round(state: State, turn: Turn) -> Step:
    """Store the completed round on the turn, tell the caller, and go on as `next_step` says.

    Rule 17: the attempt's output is the arguments of its last valid output-tool
    call (within a response, the last call wins).
    """
    pending = turn.pending
    assert pending is not None
    config = state.config
    if config.announce is AnnouncePolicy.AFTER_HOOKS:  # recorded as they ran
        pending = attrs.evolve(pending, calls=_as_ran(pending))
    tool_round = complete(pending)
    turn = attrs.evolve(turn, rounds=(*turn.rounds, tool_round), pending=None)
    if config.structured:
        produced = outputs(config.output, pending.calls)
        if produced:
            turn = attrs.evolve(turn, output=produced[-1].arguments)
    notice = Emit(notice=RoundFinished(round=tool_round, iteration=turn.iteration))
    state, effects = go_on(state, turn, next_step(config, turn))
    return state, (notice, *effects)


def awaiting_results(state: State) -> tuple[ToolCall, ...]:
    """Manual mode: the calls whose results the caller owes (`ToolFinished`), in call order.

    A reflective output's calls are the runner's own (`Reflect`): the caller owes none.
    """
    pending = None if state.turn is None else state.turn.pending
    if pending is None or state.phase is not Phase.AWAITING_RESULTS:
        return ()
    output = state.config.output
    return tuple(call for call in awaiting(pending) if not reflected(output, call))
