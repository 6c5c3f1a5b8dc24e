"""Hooks, open_agent style: events handed to the caller's callables, and their decisions.

    async def gate(event: PreToolUseEvent) -> HookDecision | None:
        if event.tool_name == "delete_file":
            return HookDecision(continue_=False, reason="Dangerous operation blocked")
        return None   # allow

    AgentOptions(..., hooks={HOOK_PRE_TOOL_USE: [gate]})       # a Client's turns
    AgentRunOptions(..., hooks={HOOK_PRE_TOOL_USE: [gate]})    # an agent's helper calls

Hooks may be sync or async; several per point run in order, and the first
that blocks wins (a later `modified_*` applies on top of earlier ones). A
hook that raises blocks the prompt or call it was asked about, with the
exception as the reason (a safety gate that fails must not open). An agent
run has no user prompt to hook: `AgentRunOptions` refuses UserPromptSubmit.

A PreToolUse hook may ask a human instead: `HookDecision(ask=True, reason=...)`
holds the call until `Client.approve` / `Client.deny` (unless a later hook
blocks it; `modified_input` still applies, to the call that runs once approved).
An agent run cannot wait for a human: there a call asked about is refused.
`ask` means nothing to the other points.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias, cast

import attrs

from toolreel.core import ChatMessage
from toolreel.core.hooks import Allowed, Ask, Blocked, Decision, HookPoint, Replaced
from toolreel.core.record import Record, Value

HOOK_PRE_TOOL_USE = "pre_tool_use"
HOOK_POST_TOOL_USE = "post_tool_use"
HOOK_USER_PROMPT_SUBMIT = "user_prompt_submit"

_POINTS = {
    HOOK_PRE_TOOL_USE: HookPoint.PRE_TOOL_USE,
    HOOK_POST_TOOL_USE: HookPoint.POST_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT: HookPoint.USER_PROMPT_SUBMIT,
}


@attrs.define(kw_only=True, repr=False)
class HookDecision(Record):
    """What a hook decided: go on (maybe with a changed input or prompt), or stop, and why."""

    continue_: bool = True
    modified_input: dict[str, Any] | None = None
    modified_prompt: str | None = None
    reason: str | None = None
    #: PreToolUse: hold the call for a human's approval (`reason` tells them why).
    ask: bool = False


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PreToolUseEvent(Value):
    """Before a tool call runs."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str
    history: tuple[ChatMessage, ...] = ()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PostToolUseEvent(Value):
    """After a tool call produced its result (`is_error` when it failed)."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_result: str
    tool_use_id: str
    is_error: bool = False
    history: tuple[ChatMessage, ...] = ()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class UserPromptSubmitEvent(Value):
    """A user prompt, before the model sees it (once per prompt, never on continuations)."""

    prompt: str
    history: tuple[ChatMessage, ...] = ()


HookEvent: TypeAlias = PreToolUseEvent | PostToolUseEvent | UserPromptSubmitEvent
#: What a hook returns, sync or async: a decision, or None to allow (anything else: allow).
HookResult: TypeAlias = HookDecision | Awaitable[HookDecision | None] | None
PreToolUseHook: TypeAlias = Callable[[PreToolUseEvent], HookResult]
PostToolUseHook: TypeAlias = Callable[[PostToolUseEvent], HookResult]
UserPromptSubmitHook: TypeAlias = Callable[[UserPromptSubmitEvent], HookResult]
#: One hook; which event it is given depends on the point it is registered under.
Hook: TypeAlias = PreToolUseHook | PostToolUseHook | UserPromptSubmitHook
#: `AgentOptions.hooks` / `AgentRunOptions.hooks`: keyed by open_agent's names
#: ("pre_tool_use"), the core's ("PreToolUse") or a HookPoint; a list of hooks per
#: point, or one hook. The key is
#: `Any` because Mapping keys are invariant: `str | HookPoint` would refuse a user's own
#: `dict[str, ...]`; keys are checked when the options are built (`ConfigError`).
Hooks: TypeAlias = Mapping[Any, Sequence[Hook] | Hook]


def hook_points(hooks: Hooks) -> dict[HookPoint, tuple[Hook, ...]]:
    """Hooks keyed by core hook point; keys may be HookPoints, "pre_tool_use" or "PreToolUse"."""
    table: dict[HookPoint, tuple[Hook, ...]] = {}
    for key, callables in hooks.items():
        point = key if isinstance(key, HookPoint) else _POINTS.get(key) or HookPoint(key)
        given = tuple(callables) if isinstance(callables, Sequence) else (callables,)
        if given:
            table[point] = table.get(point, ()) + given
    return table


async def call_hook(hook: Hook, event: HookEvent) -> object:
    """Call one hook, sync or async (the event is the kind the hook's point hands out)."""
    # The hook is given the event of the point it was registered under (checked at runtime).
    result: object = cast(Callable[[HookEvent], object], hook)(event)
    if inspect.isawaitable(result):
        result = await result
    return result


async def decide(hooks: Sequence[Hook], event: HookEvent) -> Decision:
    """The core decision from running `hooks` in order on `event`."""
    decision: Decision = Allowed()
    asked: str | None = None  # the first `ask`'s reason
    for hook in hooks:
        try:
            answer = await call_hook(hook, event)
        except (Exception, SystemExit) as exc:  # sys.exit in a callback too
            return Blocked(reason=f"hook {_name(hook)} raised {type(exc).__name__}: {exc}")
        if not isinstance(answer, HookDecision):
            continue
        if not answer.continue_:
            return Blocked(reason=answer.reason or "blocked by hook")
        if answer.modified_input is not None and isinstance(event, PreToolUseEvent):
            decision = Replaced(value=json.dumps(answer.modified_input))
            event = attrs.evolve(event, tool_input=answer.modified_input)
        if answer.modified_prompt is not None and isinstance(event, UserPromptSubmitEvent):
            decision = Replaced(value=answer.modified_prompt)
            event = attrs.evolve(event, prompt=answer.modified_prompt)
        if answer.ask and asked is None and isinstance(event, PreToolUseEvent):
            asked = answer.reason or ""
    if asked is None:
        return decision
    return Ask(reason=asked, value=decision.value if isinstance(decision, Replaced) else None)


def _name(hook: Hook) -> str:
    """A hook's name for messages."""
    return getattr(hook, "__qualname__", None) or repr(hook)
