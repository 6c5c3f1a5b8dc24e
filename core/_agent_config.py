"""AgentConfig: how a structured-output agent runs — its tools, its output, its limits.

The output spec is a closed union of two classes, so the invalid states of
reflection cannot be written down:

- `PlainOutput(tool)`: calling the output tool ends the attempt; no `submit`.
- `ReflectiveOutput(tool)`: each output-tool call is reflected (the shell runs
  the reflection handler) and the `submit` tool is offered; only `submit` ends
  the attempt. `submit` exists only here and has no settings of its own.
"""

from __future__ import annotations

import functools
from typing import TypeAlias

import attrs

from ._budget import Budget
from ._config import RetryPolicy, _names, at_least
from ._errors import ConfigError
from ._model import ModelSettings, settings_of, tool_specs
from ._records import ToolSpec
from ._text import checked_text

SUBMIT_TOOL = ToolSpec(
    name="submit",
    description=(
        "Submit your final output for validation. "
        "Call this when you are satisfied with your output."
    ),
    parameters={"type": "object", "properties": {}},
)

DEFAULT_MAX_ITERATIONS_PER_ATTEMPT = 15
AGENT_TOOL_CHOICES = frozenset({"auto", "required"})


@attrs.frozen(kw_only=True)
class PlainOutput:
    """An output tool without reflection: its call ends the attempt."""

    tool: ToolSpec


@attrs.frozen(kw_only=True)
class ReflectiveOutput:
    """An output tool with a reflection handler: refined by calls, ended by `submit`."""

    tool: ToolSpec

    @property
    def submit(self) -> ToolSpec:
        """The injected `submit` tool (the same for every reflective output)."""
        return SUBMIT_TOOL


OutputSpec: TypeAlias = PlainOutput | ReflectiveOutput


def _choice(_: object, __: object, value: str) -> None:
    """Only "auto" or "required": the agent must be free to pick among its tools."""
    if value not in AGENT_TOOL_CHOICES:
        raise ConfigError("tool_choice", value, f"one of {sorted(AGENT_TOOL_CHOICES)}")


@attrs.frozen(kw_only=True)
class AgentConfig:
    """Everything that decides how an agent run goes, fixed for the run.

    The model fields, with `tools`, make up `settings`.
    """

    output: OutputSpec
    helpers: tuple[ToolSpec, ...] = attrs.field(default=(), converter=tool_specs)
    model: str = ""
    system_prompt: str | None = attrs.field(
        default=None, validator=checked_text("system_prompt", optional=True)
    )
    max_attempts: int = attrs.field(default=3, validator=at_least(1))
    max_iterations_per_attempt: int = attrs.field(
        default=DEFAULT_MAX_ITERATIONS_PER_ATTEMPT, validator=at_least(1)
    )
    tool_choice: str = attrs.field(default="auto", validator=_choice)
    max_tokens: int | None = None
    temperature: float | None = None
    retry: RetryPolicy = attrs.field(factory=RetryPolicy)
    #: Limits on what the run spends (rule 14 of core/_agent.py); None: no limits.
    budget: Budget | None = None
    #: Helper tools whose every call waits for a human's decision (rule 15 of core/_agent.py).
    approval_required: frozenset[str] = attrs.field(default=frozenset(), converter=_names)

    def __attrs_post_init__(self) -> None:
        """Reject two tools with one name (`submit` included when it is injected), and
        budget limits the run cannot apply (a helper it lacks, a cost with no price)."""
        seen: set[str] = set()
        for spec in self.tools:
            if spec.name in seen:
                raise ConfigError(
                    "tools", spec.name, f"unique tool names (Duplicate tool name: {spec.name})"
                )
            seen.add(spec.name)
        if self.budget is not None:
            self.budget.check_config(self.model, frozenset(spec.name for spec in self.helpers))
        unknown = sorted(self.approval_required - self.helper_names)
        if unknown:
            raise ConfigError("approval_required", unknown[0], "names of helper tools")

    @functools.cached_property
    def settings(self) -> ModelSettings:
        """What every model call of the run sends besides the messages."""
        return settings_of(self)

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """What the model is offered: the helpers, the output tool, then `submit` if reflective."""
        if isinstance(self.output, ReflectiveOutput):
            return (*self.helpers, self.output.tool, self.output.submit)
        return (*self.helpers, self.output.tool)

    @property
    def output_name(self) -> str:
        """The output tool's name."""
        return self.output.tool.name

    @property
    def reflective(self) -> bool:
        """Whether output-tool calls are reflected and `submit` ends an attempt."""
        return isinstance(self.output, ReflectiveOutput)

    @functools.cached_property
    def helper_names(self) -> frozenset[str]:
        """The helper tools' names."""
        return frozenset(spec.name for spec in self.helpers)
