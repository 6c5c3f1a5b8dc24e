"""Two whole turns with a structured output (agent runs) folded through `step` and snapshotted.

Each step is rendered as the event, then the effects it caused (values through
the project's cattrs converter, empty fields left out; a `CallModel` shows how
many messages it sends and its tools by name, a `Persist` its message's role,
text and number of rounds, a `Finish` its number of rounds). The turn's
conversation follows as a transcript in the providers' shape: per iteration
one assistant message with every call, one message with every result.
"""

from __future__ import annotations

import json
from typing import Any

from test_structured import FIXED, INVOICE, PROMPT, RATE, RECORD, response

from toolreel.adapters import unstructure
from toolreel.adapters._providers._expand import ModelTurn, ResultsTurn, UserTurn, expand
from toolreel.core import (
    CallModel,
    ChatMessage,
    Finish,
    LoopConfig,
    ModelCallFailed,
    Persist,
    PlainOutput,
    PromptSubmitted,
    ReflectiveOutput,
    TimerFired,
    ToolFinished,
    Usage,
    ValidationFinished,
    initial_state,
    step,
)


def _prune(data: Any) -> Any:
    """Drop None, empty and false fields, recursively."""
    if isinstance(data, dict):
        pruned = {key: _prune(value) for key, value in data.items()}
        return {k: v for k, v in pruned.items() if not _empty(v)}
    if isinstance(data, list):
        return [_prune(item) for item in data]
    return data


def _empty(value: Any) -> bool:
    """None, False, or an empty string, list or mapping (0 is a value)."""
    return value is None or value is False or (isinstance(value, str | list | dict) and not value)


def _line(value: Any) -> str:
    """`TypeName {fields}` on one line."""
    if isinstance(value, CallModel):
        request = value.request
        data = {
            "iteration": value.iteration,
            "retry": value.retry,
            "messages": len(request.messages),
            "tools": [spec.name for spec in request.tools],
        }
    elif isinstance(value, Persist):
        message = value.message
        data = {"role": message.role, "text": message.content, "rounds": len(message.tool_rounds)}
    elif isinstance(value, Finish):
        data = unstructure(value)
        data["rounds"] = f"{len(value.rounds)} (below)"
    else:
        data = unstructure(value)
    data = _prune(data)
    if hasattr(value, "notice"):
        data["notice"] = {"type": type(value.notice).__name__, **data["notice"]}
    body = json.dumps(data, sort_keys=True, ensure_ascii=False) if data else ""
    return f"{type(value).__name__} {body}".rstrip()


def transcript(history: tuple[ChatMessage, ...]) -> list[str]:
    """The conversation as the providers receive it, one line per message."""
    lines = []
    for turn in expand(history):
        match turn:
            case UserTurn(text=text):
                lines.append(f"  user: {text!r}")
            case ModelTurn(text=text, calls=calls):
                shown = [f"{call.name}#{call.id} {call.arguments}" for call in calls]
                lines.append(f"  assistant: {text!r} calls {shown}")
            case ResultsTurn(results=results):
                shown = [
                    f"{r.name}#{r.call_id}{' ERROR' if r.is_error else ''} {r.content!r}"
                    for r in results
                ]
                lines.append(f"  results: {shown}")
    return lines


def scenario(config: LoopConfig, events: list[Any]) -> str:
    """Fold `events` from the initial state; every step, then the final conversation."""
    state = initial_state(config)
    lines = []
    for number, event in enumerate(events, start=1):
        state, effects = step(state, event)
        lines.append(f"{number:>3}. {_line(event)}")
        lines.extend(f"       -> {_line(effect)}" for effect in effects)
    lines.append(f"final phase: {state.phase.name}; conversation:")
    lines.extend(transcript(state.history))
    return "\n".join(lines) + "\n"


def test_invoice_with_reflection_fails_validation_once_then_passes(snapshot) -> None:
    config = LoopConfig(
        output=ReflectiveOutput(tool=RECORD),
        tools=(RATE,),
        model="test-model",
        system_prompt="You extract invoices.",
        max_iterations=15,
    )
    events = [
        PromptSubmitted(text=PROMPT.content),
        *response(("call_rate", "currency_rate", '{"currency": "USD"}'), text="Rate first."),
        ToolFinished(call_id="call_rate", output="0.92"),
        *response(("call_out1", "record_invoice", INVOICE)),
        ToolFinished(call_id="call_out1", output="Invoice INV-1: 2 lines, total 100.00 USD"),
        *response(("call_submit1", "submit", "{}")),
        ValidationFinished(attempt=1, problems=("$.total: the lines add up to 92, not 100",)),
        *response(("call_out2", "record_invoice", FIXED), ("call_submit2", "submit", "{}")),
        ToolFinished(call_id="call_out2", output="Invoice INV-1: 2 lines, total 92.00 USD"),
        ValidationFinished(attempt=2),
    ]
    assert scenario(config, events) == snapshot


def test_plain_output_after_a_retry_a_failing_helper_and_an_unknown_tool(snapshot) -> None:
    config = LoopConfig(
        output=PlainOutput(tool=RECORD), tools=(RATE,), model="test-model", max_iterations=15
    )
    events = [
        PromptSubmitted(text=PROMPT.content),
        ModelCallFailed(retryable=True, message="HTTP 429: slow down", status=429, retry_after=2),
        TimerFired(token="retry:1:1:1"),
        *response(
            ("call_rate", "currency_rate", '{"currency": "XXX"}'),
            ("call_web", "web_search", '{"q": "USD EUR"}'),
            usage=Usage(input_tokens=120, output_tokens=30),
        ),
        ToolFinished(call_id="call_rate", output="KeyError: 'XXX'", is_error=True),
        *response(
            ("call_out", "record_invoice", FIXED),
            ("call_rate2", "currency_rate", '{"currency": "USD"}'),
            usage=Usage(input_tokens=200, output_tokens=40),
        ),
        ToolFinished(call_id="call_rate2", output="0.92"),
        ValidationFinished(attempt=1),
    ]
    assert scenario(config, events) == snapshot
