"""LoopConfig: everything that decides how the loop behaves, fixed for a session."""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeAlias

import attrs

from ._budget import Budget
from ._compaction import Compaction
from ._errors import ConfigError
from ._fallback import FallbackPolicy, model_at
from ._model import ModelSettings, tool_specs
from ._record import Value
from ._records import ToolSpec
from ._text import checked_text

DEFAULT_FINAL_ANSWER_PROMPT = (
    "You have reached the maximum number of tool iterations. Do not call any more "
    "tools. Answer now, as well as you can, from the information gathered so far."
)

TOOL_CHOICE_MODES = frozenset({"auto", "none", "required"})


def at_least(minimum: float) -> Callable[[object, attrs.Attribute[Any], Any], None]:
    """An attrs validator: a number >= `minimum`, else `ConfigError` naming the field."""

    def check(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= minimum:
            raise ConfigError(attribute.name, value, f"a number >= {minimum:g}")

    return check


class MaxIterationsPolicy(enum.Enum):
    """What happens when the model still calls tools after `max_iterations`."""

    #: Finish with `max_iterations_reached`; the last round's calls are answered.
    STOP = "stop"
    #: Finish as a failure of kind "max_iterations" (the shell raises it).
    RAISE = "raise"
    #: One more model call that may not use tools, asking for a final answer.
    FINAL_ANSWER = "final_answer"
    #: One more model call, tools offered as usual (open_agent's cap): an answer completes
    #: the turn; calls it makes are shown, answered "not run", and the turn ends capped.
    ONE_MORE_CALL = "one_more_call"


class BlockedCallPolicy(enum.Enum):
    """What a PreToolUse block does to the turn."""

    #: The blocked call is answered with the reason and the loop goes on (toolreel's way).
    ANSWER = "answer"
    #: The round is completed (its other calls run), then the turn ends `Blocked`
    #: with the first reason: no further model call (open_agent's way).
    END_TURN = "end_turn"


class AnnouncePolicy(enum.Enum):
    """When the calls of a response are announced (`ToolCallAnnounced`)."""

    #: As the response brought them, before any PreToolUse decision (toolreel's way).
    ON_RESPONSE = "on_response"
    #: Once every PreToolUse decision of the round is in, in call order, each with
    #: the arguments it runs with; a call a hook blocked is not announced. The round
    #: is recorded with those arguments too (open_agent's way).
    AFTER_HOOKS = "after_hooks"


class EmptyPromptPolicy(enum.Enum):
    """What an empty prompt right after tool results means."""

    #: A user message like any other (toolreel's way).
    USER_MESSAGE = "user_message"
    #: A continuation (open_agent's `query("")`): when the history ends with an
    #: assistant message of rounds and no text, the turn takes those rounds up
    #: again, sends no user message and asks no UserPromptSubmit hook.
    CONTINUE = "continue"


class ErrorFormat(enum.Enum):
    """How the loop words the error results it makes itself (refused, blocked, not run)."""

    #: The message as it is: `Unknown tool: x` (toolreel's way).
    TEXT = "text"
    #: A JSON object naming the tool (open_agent's way):
    #: `{"error": "Unknown tool: x", "tool": "x"}`.
    JSON = "json"


class HookPoint(enum.Enum):
    """Where the loop asks the caller's hooks."""

    #: Once per user prompt; may allow, block, or replace the prompt.
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    #: Before each tool call; may allow, block (with a reason) or replace the arguments.
    PRE_TOOL_USE = "PreToolUse"
    #: After each tool result; told only, its answer is not awaited.
    POST_TOOL_USE = "PostToolUse"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RetryPolicy(Value):
    """Capped exponential backoff for retryable model-call failures.

    The n-th retry (n = 0, 1, ...) waits `min(max_delay, base_delay * multiplier**n)`
    seconds, or the provider's `retry_after` when it sent one (capped at
    `max_retry_after`).
    """

    max_retries: int = attrs.field(default=3, validator=at_least(0))
    base_delay: float = attrs.field(default=1.0, validator=at_least(0))
    multiplier: float = attrs.field(default=2.0, validator=at_least(1))
    max_delay: float = attrs.field(default=30.0, validator=at_least(0))
    max_retry_after: float = attrs.field(default=120.0, validator=at_least(0))

    def delay(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `retry` (0-based)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        return float(min(self.max_delay, self.base_delay * self.multiplier**retry))


#: The tool `ReflectiveOutput` offers after its output tool: calling it ends the attempt.
SUBMIT_TOOL = ToolSpec(
    name="submit",
    description=(
        "Submit your final output for validation. "
        "Call this when you are satisfied with your output."
    ),
    parameters={"type": "object", "properties": {}},
)

#: The tool choices a structured output allows: the model must be free to pick a tool.
STRUCTURED_TOOL_CHOICES = frozenset({"auto", "required"})


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TextOutput(Value):
    """The turn's answer is the text of a response without tool calls (a chat; rule 4)."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PlainOutput(Value):
    """The answer is the arguments of a call of `tool`, validated; the call ends the attempt.

    A failed validation starts a new attempt, up to `max_attempts` (rule 17).
    """

    tool: ToolSpec
    max_attempts: int = attrs.field(default=3, validator=at_least(1))


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ReflectiveOutput(Value):
    """As `PlainOutput`, but each call of `tool` is reflected (`Reflect`: its result is what
    the reflection handler says) and only the offered `submit` ends the attempt.

    Two classes, not a flag: the invalid states of reflection cannot be written down.
    """

    tool: ToolSpec
    max_attempts: int = attrs.field(default=3, validator=at_least(1))
    #: The injected `submit` tool: the same for every reflective output, so the class has it.
    submit: ClassVar[ToolSpec] = SUBMIT_TOOL


#: What a turn's answer is (`LoopConfig.output`).
OutputSpec: TypeAlias = TextOutput | PlainOutput | ReflectiveOutput

TEXT = TextOutput()


def hook_points(points: Iterable[HookPoint]) -> frozenset[HookPoint]:
    """Any iterable of hook points, held as a frozenset (a typed converter: strict callers pass)."""
    return frozenset(points)


def _names(names: Iterable[str]) -> frozenset[str]:
    """Any iterable of tool names, held as a frozenset (a typed converter: strict callers pass)."""
    return frozenset(names)


def _unique_tool_names(tools: tuple[ToolSpec, ...]) -> None:
    """Reject two tools with one name: the model could not tell them apart."""
    seen: set[str] = set()
    for spec in tools:
        if spec.name in seen:
            raise ConfigError(
                "tools", spec.name, f"unique tool names (Duplicate tool name: {spec.name})"
            )
        seen.add(spec.name)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class LoopConfig(Value):
    """How one session's loop runs: model, tools, limits, policies and hooks.

    `auto_execute=False` is manual mode: the caller runs the tools and hands the
    results back with `ToolFinished`. The model fields make up `settings`.
    `on_max_iterations`, `on_tool_blocked`, `announce`, `error_format` and
    `empty_prompt` are the loop's policies (rules 1, 5 and 7 of core/_step.py);
    `budget` limits what is spent (rule 16); `output` says what the answer is
    (rule 17): text, or a validated output through an output tool, offered
    after `tools` (then `max_iterations` counts the model calls of one attempt).
    The policies' defaults are toolreel's own behaviour, the other values
    open_agent's (toolreel.open_agent).

    Attributes:
        model: The model the requests name.
        system_prompt: The system prompt of every request.
        tools: The tools offered (names, descriptions, JSON Schemas).
        max_iterations: Model calls a turn (an attempt, for a structured output) may make
            before `on_max_iterations` decides.
        on_max_iterations: What the cap does: stop, raise, a final answer, one more call.
        retry: How failed model calls are retried (attempts, backoff).
        hooks: The hook points the loop asks (`AskHook`) or tells (`TellHook`).
        auto_execute: Run tools (`RunTool`); False: the caller answers (`ResultsRequested`).
        budget: Limits on what a turn or a session spends.
        approval_required: Tools whose calls wait for `Approved` or `Denied`.
        output: What the answer is: text (`TextOutput`), or a validated output through an
            output tool (`PlainOutput`, `ReflectiveOutput`).
        cache_key: The key every request gives the provider's prompt cache (None: none).
        fallback: The models a failed call falls back to, in order (rule 8; None: none).
        compaction: How much of a long history each request carries (None: all of it).
    """

    model: str = ""
    system_prompt: str | None = attrs.field(
        default=None, validator=checked_text("system_prompt", optional=True)
    )
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=tool_specs)
    tool_choice: str = "auto"
    max_tokens: int | None = None
    temperature: float | None = None
    max_iterations: int = attrs.field(default=5, validator=at_least(1))
    on_max_iterations: MaxIterationsPolicy = MaxIterationsPolicy.STOP
    on_tool_blocked: BlockedCallPolicy = BlockedCallPolicy.ANSWER
    announce: AnnouncePolicy = AnnouncePolicy.ON_RESPONSE
    error_format: ErrorFormat = ErrorFormat.TEXT
    empty_prompt: EmptyPromptPolicy = EmptyPromptPolicy.USER_MESSAGE
    final_answer_prompt: str = DEFAULT_FINAL_ANSWER_PROMPT
    retry: RetryPolicy = RetryPolicy()
    hooks: frozenset[HookPoint] = attrs.field(default=frozenset(), converter=hook_points)
    auto_execute: bool = True
    #: Limits on what a turn (or the session) spends (core/_budget.py); None: no limits.
    budget: Budget | None = None
    #: Tools whose calls wait for a human's `Approved` / `Denied` (rule 15 of core/_step.py).
    approval_required: frozenset[str] = attrs.field(default=frozenset(), converter=_names)
    #: The answer: text (a chat), or a validated output (rule 17 of core/_step.py).
    output: OutputSpec = TEXT
    #: What the provider's prompt cache groups the session's requests by (OpenAI's
    #: `prompt_cache_key`: the shell gives the session id); None: nothing is sent.
    cache_key: str | None = None
    #: The models a failed model call falls back to (rule 8, core/_fallback.py); None: none.
    fallback: FallbackPolicy | None = None
    #: Which turns each request carries, the others left out or summarised (rule 18 of
    #: core/_step.py; core/_compaction.py); None: the whole history.
    compaction: Compaction | None = None

    def __attrs_post_init__(self) -> None:
        """Check the tool names (the output's included), the tool choice and the budget."""
        _unique_tool_names(self.offered)
        choice = self.tool_choice
        if self.structured and choice not in STRUCTURED_TOOL_CHOICES:
            raise ConfigError("tool_choice", choice, f"one of {sorted(STRUCTURED_TOOL_CHOICES)}")
        if choice not in TOOL_CHOICE_MODES and choice not in self.tool_names:
            allowed = "'auto', 'none', 'required' or the name of a configured tool"
            raise ConfigError(
                "tool_choice", choice, f"tool_choice names no configured tool: {choice}; {allowed}"
            )
        if self.budget is not None:
            self.budget.check_config(self.model, self.tool_names)
            for name in self.fallback.models if self.fallback else ():
                self.budget.check_price(name)
        unknown = sorted(self.approval_required - self.tool_names)
        if unknown:
            raise ConfigError("approval_required", unknown[0], "names of configured tools")

    @functools.cached_property
    def tool_names(self) -> frozenset[str]:
        """The names of the configured tools (asked once per call the model makes)."""
        return frozenset(spec.name for spec in self.tools)

    def model_at(self, index: int) -> str:
        """The name of model `index`: 0 `model`, then the fallback's models in order."""
        return model_at(self.model, self.fallback, index)

    @functools.cached_property
    def structured(self) -> bool:
        """Whether the answer is a validated output (not text)."""
        return not isinstance(self.output, TextOutput)

    @property
    def offered(self) -> tuple[ToolSpec, ...]:
        """What the model is offered: `tools`, then the output tool and `submit` if reflective."""
        match self.output:
            case ReflectiveOutput(tool=tool):
                return (*self.tools, tool, SUBMIT_TOOL)
            case PlainOutput(tool=tool):
                return (*self.tools, tool)
            case _:
                return self.tools

    @functools.cached_property
    def settings(self) -> ModelSettings:
        """What every model call of the session sends besides the messages."""
        return ModelSettings(
            model=self.model,
            system_prompt=self.system_prompt,
            tools=self.offered,
            tool_choice=self.tool_choice,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            cache_key=self.cache_key,
        )
