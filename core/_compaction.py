"""Compaction policies: how much of a long conversation each model request carries.

`LoopConfig.compaction` is one of a closed union (None: every request carries the
whole history, toolreel's way):

- `KeepTurns(turns)`: a request carries the last `turns` turns (the running one
  counted); older turns are left out.
- `KeepTokens(tokens)`: a request carries as many of the latest turns as fit in
  `tokens` (the system prompt, the tools and the pinned messages counted); the
  running turn is always carried, even alone past the limit.
- `Summarise(within)`: when `within` (one of the two above) would leave turns
  out, a model call summarises them first, and the summary is carried instead.

A *turn* starts at a user message; a turn's assistant message holds its tool
calls with their results (`ToolRound`), so a call is never sent without its
result. The first `pinned` messages of the history are always carried, and the
system prompt always. Tokens are counted as the provider counted the last
request (its reported input tokens per character of that request), or as one
token per four characters before any report (`Window`).

`on_too_long` (default True): when the provider answers that the context is too
long (`ModelCallFailed.context_too_long`), the older half of the carried turns is
left out and the call is made once more (rule 18 of core/_step.py).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs

from ._errors import ConfigError
from ._record import Value
from ._text import checked_text

#: One token per this many characters, until the provider has counted a request.
CHARS_PER_TOKEN = 4
#: What an image counts as, in characters (about 1,000 tokens, as providers bill a
#: mid-sized image).
IMAGE_CHARS = 4_000

#: The summary call's system prompt (the core words it).
SUMMARY_SYSTEM_PROMPT = (
    "You summarise conversations between a user and an assistant that uses tools, "
    "so that the assistant can go on without the messages you summarise."
)
#: The instruction that ends the summary call's messages.
DEFAULT_SUMMARY_PROMPT = (
    "Summarise the conversation above for the assistant, who will no longer see it. "
    "Keep every fact, decision, name, number, file and tool result that may matter "
    "later, and what the user asked for and still expects. Write the summary only."
)
#: How the summary is put before the turns a request still carries.
SUMMARY_HEADER = "Summary of the earlier conversation (its messages were left out):\n\n"


def _positive(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: an int >= 1, else `ConfigError` naming the field."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(attribute.name, value, "an int >= 1")


def _count(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: an int >= 0, else `ConfigError` naming the field."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(attribute.name, value, "an int >= 0")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class KeepTurns(Value):
    """Carry the last `turns` turns (the running one counted) and the `pinned` first messages."""

    turns: int = attrs.field(validator=_positive)
    pinned: int = attrs.field(default=0, validator=_count)
    on_too_long: bool = True


@attrs.frozen(kw_only=True, repr=False, eq=False)
class KeepTokens(Value):
    """Carry the latest turns that fit in `tokens` (the running turn always), and the
    `pinned` first messages."""

    tokens: int = attrs.field(validator=_positive)
    pinned: int = attrs.field(default=0, validator=_count)
    on_too_long: bool = True


def _within(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: `KeepTurns` or `KeepTokens`."""
    if not isinstance(value, KeepTurns | KeepTokens):
        raise ConfigError(attribute.name, value, "KeepTurns or KeepTokens")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Summarise(Value):
    """Where `within` would leave turns out, summarise them with a model call first.

    `model` names a cheaper model for the summary call (None: the session's);
    `prompt` is the instruction that ends the summary call.
    """

    within: KeepTurns | KeepTokens = attrs.field(validator=_within)
    model: str | None = None
    prompt: str = attrs.field(default=DEFAULT_SUMMARY_PROMPT, validator=checked_text("prompt"))

    @property
    def pinned(self) -> int:
        """The leading messages always carried (`within`'s)."""
        return self.within.pinned

    @property
    def on_too_long(self) -> bool:
        """Whether a "context too long" failure compacts and retries (`within`'s)."""
        return self.within.on_too_long


#: How a session's requests are kept short (`LoopConfig.compaction`).
Compaction: TypeAlias = KeepTurns | KeepTokens | Summarise


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Window(Value):
    """Which part of the history the requests carry, and how tokens are counted.

    `start`: the first history message carried after the pinned ones; `summary`:
    what the messages before it said (a `Summarise` policy's); `counted`: the
    provider's input tokens and the characters of the last request it counted
    (None: none yet); `sent`: the characters of the request in flight;
    `summarising`: where the carried history will start once the summary call answers.
    """

    start: int = 0
    summary: str | None = None
    counted: tuple[int, int] | None = None
    sent: int = 0
    summarising: int | None = None


#: The whole history, nothing counted yet.
WHOLE = Window()
