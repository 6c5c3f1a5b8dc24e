"""Records: the values a conversation is made of, shared by events, effects and state.

- `Usage`: token counters of one model call (cached input among them), or a sum of them.
- `ToolSpec`: a tool as the model sees it (name, description, JSON Schema).
- `ToolCall`: one call the model issued; `arguments` is JSON text.
- `ToolResult`: the one answer every call gets (`is_error` for failures), with a
  `ResultReason` when the core answered it instead of a tool.
- `Reasoning`: a thinking block a provider needs back on the next call.
- `ToolRound`: the text streamed before a round's calls, the calls, their results.
- `ChatMessage`: one message of the history; a finished assistant turn is stored
  compactly as its final text plus `tool_rounds` (seed 001's `ToolExecutionRound`).
- `ModelRequest`: the provider-neutral request a `CallModel` effect carries.
- `AttemptErrors`: the validation problems of one attempt at a structured output.

A user message and a tool result may carry images (`ImagePart`, core/_content.py)
in an `images` tuple beside their text; it is empty, and costs nothing, otherwise.

JSON values (schemas, arguments) are held as JSON text so that every record is
deeply immutable, hashable and compares by value.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from ._content import ImagePart
from ._errors import ConfigError
from ._record import Value
from ._text import checked_text, surrogate_at

Role = Literal["user", "assistant"]


def _json_text(value: str | Mapping[str, Any]) -> str:
    """Hold a JSON object as canonical text, whichever form the caller gave."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Usage(Value):
    """Token counters; `extra` holds any other counter a provider reports, sorted by name.

    `input_tokens` counts every token the model read, cached or not (as OpenAI and
    Gemini report it; Anthropic's three counters are summed into it). Of those,
    `cache_read_tokens` were read from the provider's prompt cache and
    `cache_write_tokens` were written to it (Anthropic bills both apart).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    extra: tuple[tuple[str, int], ...] = ()
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages, counter by counter."""
        if not other.extra and not self.extra:
            extra: tuple[tuple[str, int], ...] = ()
        else:
            merged = dict(self.extra)
            for name, count in other.extra:
                merged[name] = merged.get(name, 0) + count
            extra = tuple(sorted(merged.items()))
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            extra=extra,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


NO_USAGE = Usage()


def _tool_name(_: object, __: object, value: Any) -> None:
    """A tool is called by its name: a non-empty str (of valid text)."""
    if not isinstance(value, str) or not value or surrogate_at(value) is not None:
        raise ConfigError("name", value, "a tool name (a non-empty str of valid Unicode text)")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolSpec(Value):
    """A tool as offered to the model; `parameters` is a JSON Schema (dict or JSON text)."""

    name: str = attrs.field(validator=_tool_name)
    description: str = attrs.field(default="", validator=checked_text("description"))
    parameters: str = attrs.field(default='{"properties":{},"type":"object"}', converter=_json_text)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolCall(Value):
    """A call the model issued: `arguments` is the JSON text it sent (`{}` when empty).

    `signature` is opaque provider data that must go back with the call
    (Gemini's `thoughtSignature`).
    """

    id: str
    name: str
    arguments: str = "{}"
    signature: str | None = None


class ResultReason(enum.StrEnum):
    """Why the core answered a call itself (`ToolResult.reason`); None: the tool's own output.

    Every text the model reads about it is worded in the core; a reader learns why from
    the reason, never from the text.
    """

    #: No configured tool has the call's name.
    UNKNOWN_TOOL = "unknown_tool"
    #: The arguments (or a hook's replacement) are not a JSON object.
    INVALID_ARGUMENTS = "invalid_arguments"
    #: A PreToolUse hook blocked the call.
    BLOCKED = "blocked"
    #: A human denied the call held for approval.
    DENIED = "denied"
    #: The call came past the iteration cap (ONE_MORE_CALL): shown, not run.
    NOT_RUN = "not_run"
    #: The budget refused the call.
    OVER_BUDGET = "over_budget"
    #: A cancel closed the round before the call finished.
    CANCELLED = "cancelled"
    #: The tool outlasted its timeout.
    TIMED_OUT = "timed_out"
    #: The call started before a crash and its outcome was lost.
    INTERRUPTED = "interrupted"
    #: A structured output's own call (the output tool unreflected, or `submit`).
    OUTPUT = "output"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolResult(Value):
    """The one result a call gets: the tool's output, or an error the model can read.

    `images` are images the tool returned beside its text (a screenshot, a chart);
    `reason` says why the core answered the call itself (None: the tool did).
    """

    call_id: str
    name: str
    content: str
    is_error: bool = False
    images: tuple[ImagePart, ...] = ()
    reason: ResultReason | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Reasoning(Value):
    """A reasoning block to send back unchanged (Anthropic thinking + signature).

    `redacted` holds the opaque data of a redacted block instead of text.
    `provider` names the wire format that produced it ("anthropic",
    "openai-responses", ...; "" when unknown, as in journals written before it
    was recorded): a codec sends a block back only to its own provider, since
    another cannot read it (a session that fell back to another provider).
    """

    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    provider: str = ""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolRound(Value):
    """One round: text before the calls, the calls, and their results in call order."""

    assistant_text: str
    tool_calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    reasoning: tuple[Reasoning, ...] = ()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ChatMessage(Value):
    """A history message; an assistant turn is its final text plus its tool rounds.

    A user message's `images` follow its text (core/_content.py).
    """

    role: Role
    content: str
    tool_rounds: tuple[ToolRound, ...] = ()
    reasoning: tuple[Reasoning, ...] = ()
    images: tuple[ImagePart, ...] = ()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelRequest(Value):
    """What to ask the model, independent of any provider's wire format.

    `tool_choice` is "auto", "none", "required", or the name of the one tool
    the model must call. `messages` ends with the turn in progress: the user
    message, then (after the first round) an assistant message holding the
    rounds so far with empty content. `cache_key` groups the session's requests
    in a provider's prompt cache (OpenAI's `prompt_cache_key`), when set.
    """

    model: str
    system: str | None
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...]
    tool_choice: str = "auto"
    max_tokens: int | None = None
    temperature: float | None = None
    cache_key: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AttemptErrors(Value):
    """The validation problems of one attempt's output (a structured output, rule 17)."""

    attempt: int
    problems: tuple[str, ...]
