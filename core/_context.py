"""The context a request carries: which turns of the history, decided before each model call.

With `LoopConfig.compaction` set (core/_compaction.py), `compacted` is asked
before each new model call (not before a retry of one): it moves the window's
`start` forward to a turn's first message when the policy says the requests
have grown too long (told as `ContextCompacted`), or, under `Summarise`, asks
for the summary call first (`summary_call`). `carried` is what a request then
holds: the pinned messages, the summary as a user message, and the history from
`start` on. `squeezed` is the answer to a "context too long" failure: the older
half of the carried turns left out. The running turn is never left out, and
since a turn's tool calls and their results live in one message, no call is
ever carried without its result.

Tokens are counted by `tokens_of`: characters of the system prompt, the tools
and the messages, turned into tokens at the rate the provider reported for the
last request (`Window.counted`), or at `CHARS_PER_TOKEN` before any report.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ._compaction import (
    CHARS_PER_TOKEN,
    IMAGE_CHARS,
    SUMMARY_HEADER,
    SUMMARY_SYSTEM_PROMPT,
    Compaction,
    KeepTokens,
    KeepTurns,
    Summarise,
    Window,
)
from ._config import LoopConfig
from ._effects import CallModel, Emit
from ._model import request
from ._notices import ContextCompacted
from ._records import ChatMessage, ModelRequest, ToolRound, Usage
from ._state import Phase, State, Turn, with_context


def message_chars(message: ChatMessage) -> int:
    """What one message counts, in characters: texts, calls, results, images."""
    size = len(message.content) + IMAGE_CHARS * len(message.images)
    for tool_round in message.tool_rounds:
        size += round_chars(tool_round)
    for block in message.reasoning:
        size += len(block.text)
    return size


def round_chars(tool_round: ToolRound) -> int:
    """What one tool round counts, in characters."""
    size = len(tool_round.assistant_text)
    for call in tool_round.tool_calls:
        size += len(call.name) + len(call.arguments)
    for result in tool_round.results:
        size += len(result.content) + IMAGE_CHARS * len(result.images)
    for block in tool_round.reasoning:
        size += len(block.text)
    return size


def _settings_chars(config: LoopConfig) -> int:
    """What every request counts besides its messages: the system prompt and the tools."""
    size = len(config.system_prompt or "")
    for spec in config.offered:
        size += len(spec.name) + len(spec.description) + len(spec.parameters)
    return size


def request_chars(config: LoopConfig, messages: Iterable[ChatMessage]) -> int:
    """What a request with `messages` counts, in characters."""
    return _settings_chars(config) + sum(message_chars(message) for message in messages)


def tokens_of(window: Window, chars: int) -> int:
    """`chars` in tokens: at the provider's rate for the last request, else one per four."""
    if window.counted is None:
        return -(-chars // CHARS_PER_TOKEN)
    tokens, counted_chars = window.counted
    return -(-chars * tokens // max(counted_chars, 1))


def _pinned(policy: Compaction, history: tuple[ChatMessage, ...]) -> int:
    """How many leading messages are always carried."""
    return min(policy.pinned, len(history))


def _first(state: State, policy: Compaction) -> int:
    """The first message of the history carried after the pinned ones."""
    history = state.history
    return min(max(state.context.start, _pinned(policy, history)), len(history))


def carried(state: State) -> tuple[ChatMessage, ...]:
    """The messages a request carries: pinned, the summary, the history from `start` on."""
    history = state.history
    window = state.context
    policy = state.config.compaction
    if policy is None or (window.start == 0 and window.summary is None):
        return history
    pinned = _pinned(policy, history)
    first = _first(state, policy)
    summary = () if window.summary is None else (summary_message(window.summary),)
    return (*history[:pinned], *summary, *history[first:])


def summary_message(summary: str) -> ChatMessage:
    """The user message that stands for the turns a summary replaced."""
    return ChatMessage(role="user", content=SUMMARY_HEADER + summary)


def _turn_starts(history: tuple[ChatMessage, ...], first: int, turn: Turn) -> list[int]:
    """The first message of each turn carried, the running turn's last (user messages)."""
    last = min(turn.start, len(history) - 1)
    return [i for i in range(first, last + 1) if history[i].role == "user"]


def _kept_turns(starts: list[int], turns: int) -> int | None:
    """KeepTurns: where the carried history starts to hold `turns` turns (None: it does)."""
    return starts[-turns] if len(starts) > turns else None


def _kept_tokens(
    state: State, turn: Turn, policy: KeepTokens, first: int, starts: list[int]
) -> tuple[int | None, int, int]:
    """KeepTokens: where the carried history starts to fit `tokens` (None: it fits), and
    the count and the characters of the request it makes."""
    history = state.history
    window = state.context
    pinned = _pinned(policy, history)
    fixed = _settings_chars(state.config) + sum(message_chars(m) for m in history[:pinned])
    fixed += sum(round_chars(r) for r in turn.rounds)
    if window.summary is not None:
        fixed += len(SUMMARY_HEADER) + len(window.summary)
    after: dict[int, int] = {}  # each turn's start: the characters from it to the end
    size = 0
    wanted = set(starts) | {first}
    for index in range(len(history) - 1, first - 1, -1):
        size += message_chars(history[index])
        if index in wanted:
            after[index] = size
    whole = fixed + after.get(first, 0)
    if tokens_of(window, whole) <= policy.tokens or not starts:
        return None, tokens_of(window, whole), whole
    for start in starts:
        chars = fixed + after[start]
        if start > first and tokens_of(window, chars) <= policy.tokens:
            return start, tokens_of(window, chars), chars
    last = starts[-1]
    chars = fixed + after[last]
    return (last if last > first else None), tokens_of(window, chars), chars


def _cut(
    state: State, turn: Turn, policy: KeepTurns | KeepTokens
) -> tuple[int | None, int | None, int]:
    """Where the policy starts the carried history now (None: where it was), the count, and
    the characters of the request that makes (under a token budget; else 0)."""
    first = _first(state, policy)
    starts = _turn_starts(state.history, first, turn)
    if isinstance(policy, KeepTurns):
        return _kept_turns(starts, policy.turns), None, 0
    return _kept_tokens(state, turn, policy, first, starts)


def compacted(state: State, turn: Turn) -> tuple[State, tuple[Emit | CallModel, ...]]:
    """Before a new model call: leave the turns the policy drops out (told), ask for their
    summary (the summary call; the phase SUMMARISING), or change nothing."""
    policy = state.config.compaction
    assert policy is not None
    within = policy.within if isinstance(policy, Summarise) else policy
    cut, tokens, chars = _cut(state, turn, within)
    if cut is None:
        return _measured(state, chars), ()
    if isinstance(policy, Summarise):
        return summary_call(state, turn, policy, cut)
    state, told = moved(state, cut, tokens=tokens)
    return _measured(state, chars), told


def _measured(state: State, chars: int) -> State:
    """The request about to be sent has `chars` characters (0: not counted)."""
    if chars == state.context.sent:
        return state
    return with_context(state, attrs.evolve(state.context, sent=chars))


def moved(
    state: State,
    cut: int,
    *,
    summary: str | None = None,
    too_long: bool = False,
    tokens: int | None = None,
) -> tuple[State, tuple[Emit]]:
    """The carried history now starts at `cut` (with a new `summary`, if one was made)."""
    policy = state.config.compaction
    assert policy is not None
    first = _first(state, policy)
    window = state.context
    kept = window.summary if summary is None else summary
    context = attrs.evolve(window, start=cut, summary=kept, summarising=None, sent=0)
    notice = ContextCompacted(
        first=first, start=cut, summary=summary, too_long=too_long, tokens=tokens
    )
    return with_context(state, context), (Emit(notice=notice),)


def summary_call(
    state: State, turn: Turn, policy: Summarise, cut: int
) -> tuple[State, tuple[CallModel]]:
    """Ask the model for a summary of the turns from the carried start up to `cut`."""
    config = state.config
    first = _first(state, policy)
    earlier = state.context.summary
    told = () if earlier is None else (summary_message(earlier),)
    ask = ChatMessage(role="user", content=policy.prompt)
    messages = (*told, *state.history[first:cut], ask)
    settings = attrs.evolve(
        config.settings, model=policy.model or config.model, system_prompt=SUMMARY_SYSTEM_PROMPT
    )
    asked = request(settings, messages, tool_choice="none" if settings.tools else None)
    context = attrs.evolve(state.context, summarising=cut)
    state = attrs.evolve(with_context(state, context), phase=Phase.SUMMARISING, turn=turn)
    return state, (CallModel(request=asked, iteration=turn.iteration, summary=True),)


def squeezed(state: State, turn: Turn) -> tuple[State, tuple[Emit]] | None:
    """After "context too long": leave the older half of the carried turns out, once a turn
    (None: the policy does not, it did already, or only the running turn is carried)."""
    policy = state.config.compaction
    if policy is None or not policy.on_too_long or turn.squeezed:
        return None
    starts = _turn_starts(state.history, _first(state, policy), turn)
    if len(starts) < 2:
        return None
    return moved(state, starts[len(starts) // 2], too_long=True)


def sent(state: State, asked: ModelRequest) -> State:
    """Note the size of the request in flight, under a token budget (to learn the rate),
    unless `compacted` counted it already."""
    policy = state.config.compaction
    within = policy.within if isinstance(policy, Summarise) else policy
    if not isinstance(within, KeepTokens) or state.context.sent > 0:
        return state
    size = request_chars(state.config, asked.messages)
    return with_context(state, attrs.evolve(state.context, sent=size))


def counted(state: State, usage: Usage) -> State:
    """After a response: the provider's count of the request in flight sets the rate."""
    window = state.context
    if window.sent <= 0 or usage.input_tokens <= 0:
        return state
    context = attrs.evolve(window, counted=(usage.input_tokens, window.sent), sent=0)
    return with_context(state, context)
