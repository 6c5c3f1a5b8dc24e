"""Structured-output agents: `AgentDefinition` and `execute_agent`.

    definition = AgentDefinition(
        build_prompt=lambda text: f"Extract the invoice from:\\n{text}",
        output=OutputTool.of(Invoice, name="record_invoice", reflection_handler=show),
        helpers=[currency_rate],
        validators=[totals_add_up],
    )
    result = await execute_agent(definition, text, Connection(model=..., provider=...))
    if isinstance(result, AgentSuccess):
        result.output            # an Invoice
    else:
        result.error.code        # "VALIDATION_FAILED", "MAX_ITERATIONS", ...

The options are an `AgentRunOptions` (a `Connection` and what the run uses),
a bare `Connection`, or an `AgentOptions` with no tool-loop field set (one
that is set would be ignored: `ConfigError`, see `AgentOptions.for_agent`).

Given a journal (`journal=` or `options.journal`: a path or a `Journal`), every
step of the run is journaled under `session_id` (or a new id, told in
`metadata.session_id`) with the run's config, so `replay`/`verify` can fold
it through `step` again.

An agent run is one turn of the one reducer whose config's `output` is the
definition's output tool (`PlainOutput` or `ReflectiveOutput`): the rules
(attempts, iterations, reflection, validation, errors) are the core's, rule 17
of core/_step.py. This module builds that config from the definition and the
options, runs it on the `Runner` (shell/_runner.py) with the definition's
callbacks as its watcher, and reports the outcome (adapters/_agent_outcome.py)
with its metadata.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
import attrs

from toolreel.adapters import (
    AgentError,
    AgentOutput,
    ContentRefused,
    Journal,
    ModelPort,
    SessionError,
    SessionNotFound,
    agent_outcome,
)
from toolreel.adapters.providers import refusal
from toolreel.adapters.replay import current
from toolreel.adapters.transcript import output_tool
from toolreel.core import (
    Approved,
    AwaitApproval,
    ChatMessage,
    Denied,
    Finish,
    ImagePart,
    LoopConfig,
    Phase,
    PlainOutput,
    PromptSubmitted,
    ReflectiveOutput,
    State,
    ToolCall,
    ToolResult,
    Usage,
    UsageError,
    awaiting_approval,
    misuse,
)
from toolreel.core.hooks import HookPoint
from toolreel.core.notices import AttemptStarted, ValidationFailed
from toolreel.core.outcomes import AttemptErrors
from toolreel.core.record import Value

from . import _checks as check
from ._agent_output import OutputTool, Validator
from ._callbacks import (
    OnAgentToolCall,
    OnAgentToolResult,
    OnAttemptStart,
    OnToolCall,
    OnToolResult,
    OnValidationFailure,
)
from ._client import open_journal
from ._connection import AGENT_OUTPUT_TOOL, Connection
from ._driver import guarded
from ._errors import ApprovalPending, UnknownApproval
from ._hooks import hook_points
from ._images import ImageSource, Prompt, submitted
from ._images import images as to_images
from ._journal_files import journal_at
from ._options import AgentOptions, AgentRunOptions
from ._prices import priced
from ._replay import AgentSession, load_agent_session
from ._runner import Observers, Runner
from ._tools import Tool, call_arguments, registry

#: The model calls of one attempt an agent makes unless its definition says otherwise.
DEFAULT_MAX_ITERATIONS_PER_ATTEMPT = 15
#: The hook points an agent run's tools are asked and told through (it has no user prompt).
AGENT_HOOKS = frozenset({HookPoint.PRE_TOOL_USE, HookPoint.POST_TOOL_USE})

I = TypeVar("I")  # noqa: E741 - the input type, as in the issue's signature
T = TypeVar("T")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AgentDefinition(Value, Generic[I, T]):
    """An agent: how to prompt it, its tools, its output, how it is validated, who watches.

    `build_prompt(input)` makes the prompt: a str, or a list of texts and
    `ImagePart`s (as `Client.query` takes; anything else is a `ConfigError`
    before a session begins).
    `helpers` are `Tool`s (or plain typed functions, wrapped with `@tool`).
    `validators` take the typed output and return a list of problems (empty:
    fine); sync or async. Callbacks get the reducer's `State` first:
    `on_tool_call(state, name, input)`, `on_tool_result(state, name, result)`,
    `on_attempt_start(state, attempt)`, `on_validation_failure(state, attempt,
    problems)` (typed `OnAgentToolCall`, ...: shell/_callbacks.py); sync or
    async; one that raises is recorded in the metadata.
    """

    build_prompt: Callable[[I], Prompt] = attrs.field(validator=check.a_callable)
    output: OutputTool[T] = attrs.field(validator=check.instance_of(OutputTool, "an OutputTool"))
    system_prompt: str | None = attrs.field(
        default=None, validator=check.instance_of(str, "a str", optional=True)
    )
    helpers: Sequence[Tool | Callable[..., Any]] = attrs.field(
        default=(),
        validator=check.sequence_of(
            lambda item: isinstance(item, Tool) or check.is_function(item), "a Tool or a function"
        ),
    )
    validators: Sequence[Validator[T]] = attrs.field(
        default=(), validator=check.sequence_of(callable, "a callable")
    )
    max_attempts: int = attrs.field(default=3, validator=check.int_at_least(1))
    max_iterations_per_attempt: int = attrs.field(
        default=DEFAULT_MAX_ITERATIONS_PER_ATTEMPT, validator=check.int_at_least(1)
    )
    tool_choice: str = attrs.field(
        default="auto", validator=check.one_of(("auto", "required"), "'auto' or 'required'")
    )
    on_tool_call: OnAgentToolCall | None = attrs.field(
        default=None, validator=check.callable_or_none
    )
    on_tool_result: OnAgentToolResult | None = attrs.field(
        default=None, validator=check.callable_or_none
    )
    on_attempt_start: OnAttemptStart | None = attrs.field(
        default=None, validator=check.callable_or_none
    )
    on_validation_failure: OnValidationFailure | None = attrs.field(
        default=None, validator=check.callable_or_none
    )


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AgentMetadata(Value):
    """What a run cost and went through, success or failure alike.

    `usage` sums every model call of every attempt; `latency` is the wall time
    in seconds; `iterations` counts iterations begun over all attempts;
    `validation_errors` the problems of each failed attempt; `history` the
    whole conversation; `session_id` the run's session in its journal (None:
    not journaled).
    """

    usage: Usage
    latency: float
    attempts: int
    iterations: int
    callback_errors: tuple[str, ...]
    validation_errors: tuple[AttemptErrors, ...]
    history: tuple[ChatMessage, ...]
    session_id: str | None = None
    #: Where the run is kept (a path, a URL or a `Journal`); None: not journaled.
    journal: str | Path | Journal | None = attrs.field(default=None, eq=False, repr=False)

    def session(self) -> AgentSession:
        """The run, rebuilt from its journal (as `load_agent_session` does).

        Its transcript is `render_transcript(result.metadata.session())`. A run
        kept in no journal has none: a UsageError saying how to keep it.
        """
        if self.journal is None or self.session_id is None:
            raise UsageError(
                "this agent run kept no journal, so it has no session to read: pass "
                "journal= to execute_agent (a MemoryJournal() will do), or set options.journal"
            )
        with journal_at(self.journal) as journal:
            return load_agent_session(journal, self.session_id)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AgentSuccess(Value, Generic[T]):
    """The validated, typed output."""

    output: T
    metadata: AgentMetadata


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AgentFailure(Value):
    """Why the run failed (`error.code`, `error.message`, `error.context`)."""

    error: AgentError
    metadata: AgentMetadata


def agent_config(
    definition: AgentDefinition[Any, Any],
    connection: Connection,
    helpers: dict[str, Tool],
    hooks: frozenset[HookPoint] = frozenset(),
    port: object = None,
) -> LoopConfig:
    """The core config a definition, its helper tools, the connection and the hook points
    the run's options fill (PreToolUse, PostToolUse) describe: a structured output's.

    `port`: the model port given for the run, for its own name (`Connection.model_for`).
    """
    spec = definition.output.spec
    assert isinstance(spec, PlainOutput | ReflectiveOutput)  # an OutputTool's, never text
    return LoopConfig(
        output=attrs.evolve(spec, max_attempts=definition.max_attempts),
        tools=tuple(helper.spec for helper in helpers.values()),
        model=connection.model_for(port),
        system_prompt=definition.system_prompt,
        max_iterations=definition.max_iterations_per_attempt,
        tool_choice=definition.tool_choice,
        max_tokens=connection.max_tokens,
        temperature=connection.temperature,
        retry=connection.retry,
        hooks=hooks & AGENT_HOOKS,
        approval_required=frozenset(
            name for name, helper in helpers.items() if helper.requires_approval
        ),
    )


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AgentCallbacks(Value):
    """The agent API's watcher of a run (the runner's `Executions`).

    The `on_*` (the definition's) get the reducer's `State` first; `observe_call`
    / `observe_result` (the options' `on_tool_call` / `on_tool_result`) get only
    a tool's `ToolCall` / `ToolResult`, as the Client's observers do — never the
    output tool's reflection.
    """

    on_tool_call: OnAgentToolCall | None = None
    on_tool_result: OnAgentToolResult | None = None
    on_attempt_start: OnAttemptStart | None = None
    on_validation_failure: OnValidationFailure | None = None
    observe_call: OnToolCall | None = None
    observe_result: OnToolResult | None = None
    #: Where what a callback raised is recorded (the runner's `callback_errors`), masked so.
    errors: list[str] = attrs.field(factory=list, eq=False)
    redact: Callable[[str], str] = str

    async def _tell(self, callback: Callable[..., Any] | None, *args: Any) -> None:
        """Call one callback; what it raised is recorded, never raised."""
        await guarded(self.errors, callback, *args, redact=self.redact)

    async def started(self, state: State, call: ToolCall, reflected: bool) -> None:
        """The definition's `on_tool_call`, then (a tool's call) the options' `on_tool_call`."""
        await self._tell(self.on_tool_call, state, call.name, call_arguments(call))
        if not reflected:
            await self._tell(self.observe_call, call)

    async def finished(self, state: State, result: ToolResult, reflected: bool) -> None:
        """The definition's `on_tool_result`, then (a tool's) the options' `on_tool_result`."""
        await self._tell(self.on_tool_result, state, result.name, result.content)
        if not reflected:
            await self._tell(self.observe_result, result)

    async def told(self, state: State, notice: AttemptStarted | ValidationFailed) -> None:
        """`on_attempt_start` or `on_validation_failure`."""
        match notice:
            case AttemptStarted(attempt=attempt):
                await self._tell(self.on_attempt_start, state, attempt)
            case ValidationFailed(attempt=attempt, problems=problems):
                await self._tell(self.on_validation_failure, state, attempt, list(problems))


async def execute_agent(
    definition: AgentDefinition[I, T],
    input: I,
    options: AgentRunOptions | Connection | AgentOptions,
    *,
    model: ModelPort | None = None,
    abort: anyio.Event | None = None,
    journal: str | Path | Journal | None = None,
    session_id: str | None = None,
    images: Iterable[ImageSource] | None = None,
) -> AgentSuccess[T] | AgentFailure:
    """Run the agent on `input`: the validated output, or why there is none.

    `images` (paths, bytes, URLs or `ImagePart`s, as `run(..., images=)`)
    follow the prompt `definition.build_prompt(input)` makes; a model that
    cannot take them refuses at once with `ContentRefused`, before anything
    is sent or journaled.

    `options` is an `AgentRunOptions` (its `connection` says how to reach the
    model: provider, base_url, api_key, model, max_tokens, temperature,
    retry, ...), a bare `Connection`, or an `AgentOptions` none of whose
    tool-loop fields is set (`ConfigError` naming each that is, and what to
    use instead); `model` overrides the port, as in `Client(options, model=...)`.
    Setting `abort` cuts a model call in flight and is checked before every
    model call: the run ends `EXECUTION_CANCELLED`. A cancelled anyio scope
    stops the run too, and the cancellation propagates as anyio requires.

    Helper tools get what the loop's tools get: `options.tool_timeout` (unless
    the tool sets its own), `options.max_concurrent_tools`, and `options.hooks`
    (PreToolUse may block a helper call — its result is then the error
    "Tool call blocked: <reason>" — or change its input; PostToolUse is told
    every helper result). The output tool's call is never hooked.

    Who is told what, for each helper call, in this order: the definition's
    `on_tool_call(state, name, input)`, then `options.on_tool_call(ToolCall)`
    (the call as the model made it, before the hooks); once it has its
    result, the definition's `on_tool_result(state, name, output)`, then
    `options.on_tool_result(ToolResult)` (the result the model reads: a
    blocked or timed-out call's error too). A call of the output tool (its
    reflection handler) tells only the definition's two callbacks; the
    definition's `on_attempt_start` / `on_validation_failure` are told as
    attempts start and fail; `options.on_notice` is told every notice of
    the run, then its `Finish`. What any of them raises is recorded in
    `metadata.callback_errors`.

    `journal` (else `options.journal`; a path or a `Journal`) journals every
    step under `session_id` (else `options.session_id`, else a new id): a
    new session, held for the run (`begin` ... `release`). An id already in
    the journal whose run a crash interrupted is resumed, like `Client.resume`:
    the run goes on from its last journaled step under its recorded config
    (`input` is not asked again); a helper call that started without an
    outcome runs again only if its tool is idempotent, else its result is
    "interrupted; outcome unknown". A finished run's id (or a tool loop's) is
    a `SessionError`. Without a journal nothing is kept. (A resumed run
    goes on with the prompt and images it was given first.)

    Args:
        definition: The agent: its prompt, helper tools, output tool, validators and
            attempts.
        input: What `definition.build_prompt(input)` turns into the prompt.
        options: How to reach the model and run the helpers (see above).
        model: A model port to use instead of the one the options describe.
        abort: An event that, once set, ends the run `EXECUTION_CANCELLED`.
        journal: Journal every step here (a path or a `Journal`).
        session_id: The run's id in the journal (default: a new one).
        images: Images sent after the prompt's text.

    Returns:
        `AgentSuccess` with the validated, typed `output`, or `AgentFailure` with the
        `error` (its `code` says why); both with `metadata` (usage, attempts,
        iterations, the conversation).

    Raises:
        ApprovalPending: A helper call waits for a person (`resume_agent` goes on).
        ConfigError: The options set a tool-loop field, or an argument is invalid.
    """
    options = AgentRunOptions.of(options)
    helpers = registry(definition.helpers)
    # the run's id before its config: the default key of the provider's prompt cache
    sid = session_id or options.session_id or uuid.uuid4().hex
    config = run_config(definition, options, helpers, model, sid)
    attached = to_images(images)
    port: ModelPort = model or options.connection.open_model()
    try:
        _refuse(port, attached)
        return await _journaled(
            definition,
            input,
            options,
            Given(model=port, images=attached, abort=abort),
            config=config,
            helpers=helpers,
            journal=journal,
            session_id=sid,
        )
    finally:
        if model is None:  # a caller's own model is the caller's to close
            with anyio.CancelScope(shield=True):
                await port.aclose()


def run_config(
    definition: AgentDefinition[Any, Any],
    options: AgentRunOptions,
    helpers: dict[str, Tool],
    port: object = None,
    session_id: str = "",
) -> LoopConfig:
    """The config of a run of `definition` under `options` (its hooks and budget); `port`:
    the caller's model, if any (`agent_config`); `session_id`: the run's, the default key
    of the provider's prompt cache."""
    hooks = frozenset(hook_points(options.hooks))
    connection = options.connection
    config = agent_config(definition, connection, helpers, hooks, port)
    budget = priced(options.budget, config.model, connection.provider, connection.base_url)
    cache_key = connection.cache_key(session_id) if session_id else None
    return attrs.evolve(config, budget=budget, cache_key=cache_key)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Given(Value):
    """What a run is given besides its input: the model port, the prompt's images, `abort`."""

    model: ModelPort
    images: tuple[ImagePart, ...] = ()
    abort: anyio.Event | None = None
    #: The prompt's event, once `build_prompt` has made it (`prompted`).
    prompt: PromptSubmitted | None = None

    def prompted(self, build_prompt: Callable[[Any], Prompt], input: Any) -> Given:
        """With the prompt `build_prompt(input)` makes (a str, or texts and images: the rule of
        `submitted`), its images refused at once if the model cannot take them."""
        prompt = submitted(build_prompt(input), self.images)
        _refuse(self.model, prompt.images)
        return attrs.evolve(self, prompt=prompt)


def _refuse(port: ModelPort, images: tuple[ImagePart, ...]) -> None:
    """`ContentRefused` when the model behind `port` cannot take the prompt's images."""
    codec = getattr(port, "codec", None)
    if images and codec is not None:
        why = refusal(codec, (ChatMessage(role="user", content="", images=images),))
        if why is not None:
            raise ContentRefused(why)


async def _journaled(
    definition: AgentDefinition[I, T],
    input: I,
    options: AgentRunOptions,
    given: Given,
    *,
    config: LoopConfig,
    helpers: dict[str, Tool],
    journal: str | Path | Journal | None,
    session_id: str | None,
    decisions: tuple[Approved | Denied, ...] | None = None,
) -> AgentSuccess[T] | AgentFailure:
    """The run, journaled where `journal` (else `options.journal`) says, if anywhere.

    `decisions` (`resume_agent`): the session must hold an unfinished run, which
    goes on with the human's decisions on its held calls.
    """
    where = journal if journal is not None else options.journal
    if where is None:
        if decisions is not None:
            raise UsageError("resume_agent needs the journal the run was kept in")
        given = given.prompted(definition.build_prompt, input)
        run = Run(definition, options, given, config=config, helpers=helpers)
        return await run.first(input)
    kept = open_journal(where)
    sid = session_id or options.session_id or uuid.uuid4().hex
    try:
        kept.flush()  # steps a failed write kept back go first: the session is read whole
        if decisions is not None and sid not in kept.sessions():
            raise SessionNotFound(sid, repr(where))
        known = sid in kept.sessions()
        if known:  # a crash interrupted it, or it paused: go on under its own config
            config = _recorded(kept, sid, config)
        else:  # a prompt that is none begins no session
            given = given.prompted(definition.build_prompt, input)
        run = Run(definition, options, given, config=config, helpers=helpers, journal=kept, sid=sid)
        owed = run.runner.restore() if known else []
        if known:
            _check(sid, run.runner.state, decisions or ())
        lease = kept.begin(sid, config, from_seq=run.runner.seq)
        result: AgentSuccess[T] | AgentFailure
        try:
            if known:
                result = await run.resumed(owed, decisions or ())
            else:
                result = await run.first(input)
        finally:
            kept.release(lease)
        return attrs.evolve(result, metadata=attrs.evolve(result.metadata, journal=where))
    finally:
        if isinstance(where, str | Path):  # a journal opened here is closed here
            kept.close()


def _recorded(journal: Journal, sid: str, config: LoopConfig) -> LoopConfig:
    """The config an interrupted run goes on under: the one it recorded (a bfd8293 run's
    made today's), with the hooks today's options fill.

    A tool loop's session is a `SessionError`: use a new id.
    """
    recorded = journal.config(sid)
    if not recorded.structured:
        raise SessionError(f"session {sid!r} is a tool loop's, not an agent run: use a new id")
    return attrs.evolve(current(recorded), hooks=config.hooks)


class Run:
    """One agent run on a `Runner`: its definition, options and what it was given."""

    def __init__(
        self,
        definition: AgentDefinition[Any, T],
        options: AgentRunOptions,
        given: Given,
        *,
        config: LoopConfig,
        helpers: dict[str, Tool],
        journal: Journal | None = None,
        sid: str = "",
    ) -> None:
        """A run not started yet (journaled to `journal` under `sid`, if given)."""
        self.definition = definition
        self.config = config
        self.journal = journal
        self.session_id = sid
        self.given = given
        port = given.model
        self.runner = Runner(
            config=config,
            model=port,
            tools=helpers,
            hooks=hook_points(options.hooks),
            journal=journal,
            session_id=sid,
            redactor=options.connection.redactor(port),
            tool_timeout=options.tool_timeout,
            max_concurrent_tools=options.max_concurrent_tools,
            observers=Observers(on_notice=options.on_notice),
            output=definition.output,
            validators=definition.validators,
            abort=given.abort,
        )
        self.runner.executions = AgentCallbacks(
            on_tool_call=definition.on_tool_call,
            on_tool_result=definition.on_tool_result,
            on_attempt_start=definition.on_attempt_start,
            on_validation_failure=definition.on_validation_failure,
            observe_call=options.on_tool_call,
            observe_result=options.on_tool_result,
            errors=self.runner.callback_errors,
            redact=self.runner.redactor.text,
        )

    async def first(self, input: Any) -> AgentSuccess[T] | AgentFailure:
        """Run the definition's prompt for `input` (and the given images) to its end."""
        given = (
            self.given
            if self.given.prompt
            else self.given.prompted(self.definition.build_prompt, input)
        )
        prompt = given.prompt
        assert prompt is not None  # `prompted` made it
        return await self._ran(lambda: self.runner.turn(prompt))

    async def resumed(
        self, owed: list[Any], decisions: tuple[Approved | Denied, ...]
    ) -> AgentSuccess[T] | AgentFailure:
        """Go on from where the journal left the run: what was owed, then the decisions."""

        return await self._ran(lambda: self.runner.resume(owed, decisions))

    async def _ran(
        self, work: Callable[[], Awaitable[Finish | AwaitApproval | None]]
    ) -> AgentSuccess[T] | AgentFailure:
        """Carry out `work` (a test model told the output tool's name); the result."""
        started = time.monotonic()
        told = AGENT_OUTPUT_TOOL.set(output_tool(self.config.output))
        try:
            finish = await work()
        finally:
            AGENT_OUTPUT_TOOL.reset(told)
        assert finish is not None  # a run ends or pauses (an unfinished one goes on: `_check`)
        if isinstance(finish, AwaitApproval):
            raise ApprovalPending(self.session_id, finish.requests, how=RESUME_AGENT)
        metadata = self._metadata(finish, time.monotonic() - started)
        outcome = agent_outcome(finish, self.config)
        if isinstance(outcome, AgentOutput):
            output: T = self.runner.accepted
            return AgentSuccess(output=output, metadata=metadata)
        return AgentFailure(error=outcome, metadata=metadata)

    def _metadata(self, finish: Finish, latency: float) -> AgentMetadata:
        """The run's metadata from its `Finish` and what the runner recorded."""
        attempts = finish.attempts
        assert attempts is not None
        return AgentMetadata(
            usage=finish.usage,
            latency=latency,
            attempts=attempts.number,
            iterations=finish.iterations,
            callback_errors=tuple(self.runner.callback_errors),
            validation_errors=attempts.failed,
            history=self.runner.state.history,
            session_id=self.session_id if self.journal is not None else None,
        )


#: How a paused agent run goes on (`ApprovalPending`'s advice).
RESUME_AGENT = "resume_agent(session_id, definition, options, approve=..., deny=...)"


def _check(sid: str, state: State, decisions: tuple[Approved | Denied, ...]) -> None:
    """Refuse decisions on calls that wait for none; a pause with no decision stays one;
    a finished run is no run to go on with."""
    if state.phase is Phase.IDLE:
        raise SessionError(f"session {sid!r} is already in the journal and finished: use a new id")
    held = [request.call.id for request in awaiting_approval(state)]
    for decision in decisions:  # in the core's words; a call decided twice is decided once
        if (error := misuse(state.phase, decision, held)) is not None:
            raise UnknownApproval(str(error)) from error
        held.remove(decision.call_id)
    if state.phase is Phase.AWAITING_APPROVAL and not decisions:
        raise ApprovalPending(sid, awaiting_approval(state), how=RESUME_AGENT)
