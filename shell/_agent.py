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
`metadata.session_id`) with the agent's config, so `replay`/`verify` can fold
it through `agent_step` again.

The rules (attempts, iterations, reflection, validation, errors) are the
core's: see core/_agent.py. This module builds the core config from the
definition and the options, runs `AgentRunner`, and reports the outcome with
its metadata.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
import attrs

from toolreel.adapters import Journal, ModelPort, SessionError, SessionNotFound
from toolreel.adapters._errors import ContentRefused
from toolreel.adapters._providers._images import refusal
from toolreel.core import (
    DEFAULT_MAX_ITERATIONS_PER_ATTEMPT,
    AgentConfig,
    AgentError,
    AgentOutput,
    AgentPhase,
    Approved,
    AttemptErrors,
    AwaitApproval,
    ChatMessage,
    Denied,
    FinishAgent,
    ImagePart,
    PromptSubmitted,
    Usage,
    UsageError,
    agent_awaiting_approval,
    misuse,
)

from . import _checks as check
from ._agent_output import OutputTool, Validator
from ._agent_runner import AgentCallbacks, AgentRunner
from ._callbacks import (
    OnAgentToolCall,
    OnAgentToolResult,
    OnAttemptStart,
    OnValidationFailure,
)
from ._client import open_journal
from ._connection import AGENT_OUTPUT_TOOL, Connection
from ._errors import ApprovalPending, UnknownApproval
from ._hooks import hook_points
from ._images import ImageSource, Prompt, submitted
from ._images import images as to_images
from ._journal_files import journal_at
from ._options import AgentOptions, AgentRunOptions
from ._replay import AgentSession, load_agent_session
from ._restore import Unfinished, unfinished_run
from ._tools import Tool, registry

I = TypeVar("I")  # noqa: E741 - the input type, as in the issue's signature
T = TypeVar("T")


@attrs.frozen(kw_only=True)
class AgentDefinition(Generic[I, T]):
    """An agent: how to prompt it, its tools, its output, how it is validated, who watches.

    `build_prompt(input)` makes the prompt: a str, or a list of texts and
    `ImagePart`s (as `Client.query` takes; anything else is a `ConfigError`
    before a session begins).
    `helpers` are `Tool`s (or plain typed functions, wrapped with `@tool`).
    `validators` take the typed output and return a list of problems (empty:
    fine); sync or async. Callbacks get the reducer's `AgentState` first:
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


@attrs.frozen(kw_only=True)
class AgentMetadata:
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


@attrs.frozen(kw_only=True)
class AgentSuccess(Generic[T]):
    """The validated, typed output."""

    output: T
    metadata: AgentMetadata


@attrs.frozen(kw_only=True)
class AgentFailure:
    """Why the run failed (`error.code`, `error.message`, `error.context`)."""

    error: AgentError
    metadata: AgentMetadata


def agent_config(
    definition: AgentDefinition[Any, Any],
    connection: Connection,
    helpers: dict[str, Tool],
    port: object = None,
) -> AgentConfig:
    """The core config a definition, its helper tools and the connection describe.

    `port`: the model port given for the run, for its own name (`Connection.model_for`).
    """
    return AgentConfig(
        output=definition.output.spec,
        helpers=tuple(helper.spec for helper in helpers.values()),
        model=connection.model_for(port),
        system_prompt=definition.system_prompt,
        max_attempts=definition.max_attempts,
        max_iterations_per_attempt=definition.max_iterations_per_attempt,
        tool_choice=definition.tool_choice,
        max_tokens=connection.max_tokens,
        temperature=connection.temperature,
        retry=connection.retry,
        approval_required=frozenset(
            name for name, helper in helpers.items() if helper.requires_approval
        ),
    )


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
    the run, then its `FinishAgent`. What any of them raises is recorded in
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
    config = attrs.evolve(
        agent_config(definition, options.connection, helpers, model), budget=options.budget
    )
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
            session_id=session_id,
        )
    finally:
        if model is None:  # a caller's own model is the caller's to close
            with anyio.CancelScope(shield=True):
                await port.aclose()


@attrs.frozen(kw_only=True)
class Given:
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
    config: AgentConfig,
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
        return await _execute(definition, input, options, given, config=config, helpers=helpers)
    kept = open_journal(where)
    sid = session_id or options.session_id or uuid.uuid4().hex
    try:
        kept.flush()  # steps a failed write kept back go first: the session is read whole
        if decisions is not None and sid not in kept.sessions():
            raise SessionNotFound(sid, repr(where))
        resumed = _unfinished(kept, sid) if sid in kept.sessions() else None
        if resumed is not None:
            _check(sid, resumed[1], decisions or ())
        if resumed is not None:  # a crash interrupted it: go on under its own config
            config = resumed[0]
            lease = kept.begin(sid, config, from_seq=resumed[1].seq)
        else:
            if decisions is None:  # a prompt that is none begins no session
                given = given.prompted(definition.build_prompt, input)
            lease = kept.begin(sid, config)
        try:
            result = await _execute(
                definition,
                input,
                options,
                given,
                config=config,
                helpers=helpers,
                journal=kept,
                session_id=sid,
                resumed=resumed[1] if resumed is not None else None,
                decisions=decisions or (),
            )
        finally:
            kept.release(lease)
        return attrs.evolve(result, metadata=attrs.evolve(result.metadata, journal=where))
    finally:
        if isinstance(where, str | Path):  # a journal opened here is closed here
            kept.close()


async def _execute(
    definition: AgentDefinition[I, T],
    input: I,
    options: AgentRunOptions,
    given: Given,
    *,
    config: AgentConfig,
    helpers: dict[str, Tool],
    journal: Journal | None = None,
    session_id: str = "",
    resumed: Unfinished | None = None,
    decisions: tuple[Approved | Denied, ...] = (),
) -> AgentSuccess[T] | AgentFailure:
    """Run the agent (journaled to `journal` under `session_id`, if given; going on from
    where a crash left `resumed`)."""
    port = given.model
    runner = AgentRunner(
        config=config,
        model=port,
        helpers=helpers,
        output=definition.output,
        validators=definition.validators,
        callbacks=AgentCallbacks(
            on_tool_call=definition.on_tool_call,
            on_tool_result=definition.on_tool_result,
            on_attempt_start=definition.on_attempt_start,
            on_validation_failure=definition.on_validation_failure,
            observe_call=options.on_tool_call,
            observe_result=options.on_tool_result,
            on_notice=options.on_notice,
        ),
        tool_timeout=options.tool_timeout,
        max_concurrent_tools=options.max_concurrent_tools,
        hooks=hook_points(options.hooks),
        abort=given.abort,
        redactor=options.connection.redactor(port),
        journal=journal,
        session_id=session_id,
    )
    started = time.monotonic()
    told = AGENT_OUTPUT_TOOL.set(config.output_name)  # for a test model: which tool ends the run
    try:
        if resumed is None:
            prompt = given.prompt or given.prompted(definition.build_prompt, input).prompt
            assert prompt is not None
            finish = await runner.run(prompt.text, prompt.images)
        else:
            finish = await runner.resume(resumed.state, resumed.seq, resumed.owed, decisions)
    finally:
        AGENT_OUTPUT_TOOL.reset(told)
    if isinstance(finish, AwaitApproval):
        raise ApprovalPending(session_id, finish.requests, how=RESUME_AGENT)
    metadata = _metadata(finish, runner, time.monotonic() - started)
    if journal is not None:
        metadata = attrs.evolve(metadata, session_id=session_id)
    if isinstance(finish.outcome, AgentOutput):
        output: T = runner.accepted
        return AgentSuccess(output=output, metadata=metadata)
    return AgentFailure(error=finish.outcome, metadata=metadata)


def _metadata(finish: FinishAgent, runner: AgentRunner, latency: float) -> AgentMetadata:
    """The run's metadata from its `FinishAgent` and what the runner recorded."""
    return AgentMetadata(
        usage=finish.usage,
        latency=latency,
        attempts=finish.attempts,
        iterations=finish.iterations,
        callback_errors=tuple(runner.callback_errors),
        validation_errors=runner.state.errors,
        history=finish.history,
    )


#: How a paused agent run goes on (`ApprovalPending`'s advice).
RESUME_AGENT = "resume_agent(session_id, definition, options, approve=..., deny=...)"


def _check(sid: str, unfinished: Unfinished, decisions: tuple[Approved | Denied, ...]) -> None:
    """Refuse decisions on calls that wait for none; a pause with no decision stays one."""
    held = [request.call.id for request in agent_awaiting_approval(unfinished.state)]
    for decision in decisions:  # in the core's words; a call decided twice is decided once
        if (error := misuse(unfinished.state.phase, decision, held)) is not None:
            raise UnknownApproval(str(error)) from error
        held.remove(decision.call_id)
    if unfinished.state.phase is AgentPhase.AWAITING_APPROVAL and not decisions:
        requests = agent_awaiting_approval(unfinished.state)
        raise ApprovalPending(sid, requests, how=RESUME_AGENT)


def _unfinished(journal: Journal, sid: str) -> tuple[AgentConfig, Unfinished]:
    """The recorded config and the stopping point of an agent run a crash interrupted.

    A finished run, or a tool loop's session, is a `SessionError`: use a new id.
    """
    recorded = journal.config(sid)
    if not isinstance(recorded, AgentConfig):
        raise SessionError(f"session {sid!r} is a tool loop's, not an agent run: use a new id")
    unfinished = unfinished_run(journal, sid, recorded)
    if unfinished is None:
        raise SessionError(f"session {sid!r} is already in the journal and finished: use a new id")
    return recorded, unfinished
