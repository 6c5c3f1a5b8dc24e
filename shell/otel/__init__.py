"""toolreel.otel: OpenTelemetry spans for every turn, model call and tool call (`toolreel[otel]`).

    from toolreel.otel import instrument, uninstrument

    instrument()                              # spans go to the global TracerProvider
    instrument(tracer_provider=provider)      # or to this one
    ...
    uninstrument()                            # turns started from now on make no spans

Instrumentor style, as OpenTelemetry's own instrumentations do it: once
instrumented, every turn that starts (a `Client` turn, `run()`, an
`execute_agent` run, the CLI) is traced, without a change to its options.
Nothing here is imported by `toolreel.shell`, so an application that never
imports this module pays nothing, and one that never calls `instrument()`
pays one tuple check per turn.

Spans follow the OpenTelemetry GenAI semantic conventions (status:
development), with `gen_ai.provider.name` (the current name; the older
`gen_ai.system` is not emitted):

- `invoke_agent` (INTERNAL): one turn of the loop or one agent run; the
  current span while it runs, so spans the caller's tools make nest in it.
  `gen_ai.operation.name`="invoke_agent", `gen_ai.provider.name`,
  `gen_ai.request.model`, `gen_ai.conversation.id` (the session id),
  `gen_ai.output.type`="json" (agent runs), and at the end
  `gen_ai.usage.input_tokens` / `output_tokens` (the turn's sum),
  `gen_ai.response.finish_reasons` (the final answer's), `toolreel.run`
  ("loop" or "agent"), `toolreel.finish_reason`, `toolreel.iterations`.
- `chat {model}` (CLIENT), a child of the turn, one per model call (each
  retry its own): `gen_ai.operation.name`="chat", `gen_ai.provider.name`,
  `gen_ai.request.model`, `gen_ai.request.max_tokens` / `temperature` (when
  set), `server.address` / `server.port`, `toolreel.iteration`,
  `toolreel.retry`; at the end `gen_ai.response.finish_reasons`,
  `gen_ai.usage.input_tokens` / `output_tokens`.
- `execute_tool {name}` (INTERNAL), a child of the turn (parallel calls are
  siblings): `gen_ai.operation.name`="execute_tool", `gen_ai.tool.name`,
  `gen_ai.tool.call.id`, `gen_ai.tool.type`="function".

A span whose operation failed has status ERROR and `error.type`: the HTTP
status or "model_error" for a model call, "tool_error" for a tool's error
result, the `FailureCode` (or the agent's `ErrorCode`) for a turn,
"cancelled" for anything cancelled, else the exception's class name. Status
descriptions pass through the run's `Redactor`: no key reaches a span.
Message and tool contents are not recorded (opt-in in the conventions; not
offered here).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import Token
from typing import Any
from urllib.parse import urlsplit

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.context import Context
except ModuleNotFoundError as exc:  # pragma: no cover - the extra is what provides it
    raise ImportError("toolreel.otel needs OpenTelemetry: pip install 'toolreel[otel]'") from exc

import anyio

from toolreel.adapters import AgentError, ErrorCode, agent_outcome
from toolreel.core import (
    CallModel,
    Cancelled,
    Finish,
    ModelCallFailed,
    ModelResponded,
    ToolCall,
    ToolFinished,
    ToolTimedOut,
    Usage,
)
from toolreel.core.outcomes import Failed
from toolreel.shell.telemetry import (
    ModelOutcome,
    Observer,
    ToolOutcome,
    Turn,
    TurnEnd,
    TurnInfo,
    add_observer,
    remove_observer,
)

__all__ = ["instrument", "is_instrumented", "uninstrument"]

#: The providers whose `gen_ai.provider.name` differs from toolreel's name for them.
PROVIDER_NAMES = {"gemini": "gcp.gemini"}

_installed: Observer | None = None


def instrument(tracer_provider: trace.TracerProvider | None = None) -> None:
    """Trace every turn that starts from now on (again: with the new provider instead)."""
    global _installed  # noqa: PLW0603 - one instrumentation per process, as OTel's own
    uninstrument()
    tracer = trace.get_tracer("toolreel", tracer_provider=tracer_provider)

    def observe(info: TurnInfo) -> Turn:
        """The spans of the turn `info` describes."""
        return SpanTurn(tracer, info)

    _installed = observe
    add_observer(observe)


def uninstrument() -> None:
    """Make no more spans (turns under way finish theirs)."""
    global _installed  # noqa: PLW0603
    if _installed is not None:
        remove_observer(_installed)
        _installed = None


def is_instrumented() -> bool:
    """Whether `instrument()` is in force."""
    return _installed is not None


def _usage(usage: Usage) -> dict[str, int]:
    """Token counts as GenAI attributes."""
    return {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }


def _server(base_url: str | None) -> dict[str, Any]:
    """`server.address` and `server.port` of a base URL (none when there is no URL)."""
    if not base_url:
        return {}
    try:
        parts = urlsplit(base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return {}
    return {"server.address": parts.hostname or "", "server.port": port}


class SpanTurn:
    """The spans of one turn: the turn's, and one per model call and tool call under it."""

    def __init__(self, tracer: trace.Tracer, info: TurnInfo) -> None:
        """Start the turn's span (a child of the current span) and make it current."""
        self.tracer = tracer
        self.info = info
        self.common: dict[str, Any] = {"gen_ai.request.model": info.model}
        if info.provider:
            self.common["gen_ai.provider.name"] = PROVIDER_NAMES.get(info.provider, info.provider)
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            **self.common,
            "toolreel.run": info.kind,
        }
        if info.session_id:
            attributes["gen_ai.conversation.id"] = info.session_id
        if info.kind == "agent":
            attributes["gen_ai.output.type"] = "json"
        self.span = tracer.start_span(
            "invoke_agent", kind=trace.SpanKind.INTERNAL, attributes=attributes
        )
        self.context = trace.set_span_in_context(self.span)
        self._token = otel_context.attach(self.context)
        self._model: tuple[trace.Span, Token[Context]] | None = None
        self._tools: dict[str, tuple[trace.Span, Token[Context]]] = {}

    def _child(self, name: str, kind: trace.SpanKind, attributes: dict[str, Any]) -> trace.Span:
        """A span under the turn's."""
        return self.tracer.start_span(name, context=self.context, kind=kind, attributes=attributes)

    def _fail(self, span: trace.Span, kind: str, description: str | None = None) -> None:
        """Mark `span` failed with `error.type` `kind` (the description redacted)."""
        span.set_attribute("error.type", kind)
        text = self.info.redactor.text(description) if description else None
        span.set_status(trace.Status(trace.StatusCode.ERROR, text))

    def _fail_with(self, span: trace.Span, error: BaseException) -> None:
        """Mark `span` failed by what was raised (a cancel is "cancelled")."""
        if isinstance(error, anyio.get_cancelled_exc_class()):
            self._fail(span, "cancelled", "cancelled")
        else:
            self._fail(span, type(error).__qualname__, f"{type(error).__name__}: {error}")

    def model_started(self, call: CallModel) -> None:
        """Start the `chat {model}` span and make it current."""
        request = call.request
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            **self.common,
            "gen_ai.request.model": request.model,
            **_server(self.info.base_url),
            "toolreel.iteration": call.iteration,
            "toolreel.retry": call.retry,
        }
        if request.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = request.max_tokens
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        span = self._child(f"chat {request.model}", trace.SpanKind.CLIENT, attributes)
        self._model = (span, otel_context.attach(trace.set_span_in_context(span)))

    def model_ended(self, call: CallModel, outcome: ModelOutcome) -> None:
        """End the model call's span with its finish reason and usage, or its failure."""
        if self._model is None:
            return
        (span, token), self._model = self._model, None
        match outcome:
            case ModelResponded(finish_reason=reason, usage=usage):
                span.set_attributes({"gen_ai.response.finish_reasons": (reason,), **_usage(usage)})
            case ModelCallFailed(status=status, message=message, retryable=retryable):
                span.set_attribute("toolreel.retryable", retryable)
                self._fail(span, str(status) if status else "model_error", message)
            case None:
                self._fail(span, "cancelled", "the model call was cut short")
            case _:
                self._fail_with(span, outcome)
        otel_context.detach(token)
        span.end()

    def tool_started(self, call: ToolCall) -> None:
        """Start the `execute_tool {name}` span, current in the tool's own task."""
        span = self._child(
            f"execute_tool {call.name}",
            trace.SpanKind.INTERNAL,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.type": "function",
            },
        )
        self._tools[call.id] = (span, otel_context.attach(trace.set_span_in_context(span)))

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """End the tool call's span; an error result or an exception fails it."""
        found = self._tools.pop(call.id, None)
        if found is None:
            return
        span, token = found
        if isinstance(outcome, ToolFinished | ToolTimedOut):
            if isinstance(outcome, ToolTimedOut) or outcome.is_error:
                self._fail(span, "tool_error")
        else:
            self._fail_with(span, outcome)
        otel_context.detach(token)
        span.end()

    def retry_waiting(self, seconds: float) -> None:
        """The turn's span notes the wait (the failed call's span says why)."""
        self.span.add_event("toolreel.retry_scheduled", {"toolreel.delay_seconds": seconds})

    def round_finished(self, iteration: int, names: Sequence[str]) -> None:
        """Nothing: the tool spans are the round."""

    def ended(self, end: TurnEnd, error: BaseException | None) -> None:
        """End the turn's span with its usage and finish reason, or its failure."""
        span = self.span
        match end:
            case Finish(attempts=attempts) if attempts is not None:  # an agent run
                outcome = agent_outcome(end)
                span.set_attributes(
                    {
                        **_usage(end.usage),
                        "toolreel.finish_reason": "error"
                        if isinstance(outcome, AgentError)
                        else "output",
                        "toolreel.iterations": end.iterations,
                        "toolreel.attempts": attempts.number,
                    }
                )
                if isinstance(outcome, AgentError):
                    kind = (
                        "cancelled"
                        if outcome.code is ErrorCode.EXECUTION_CANCELLED
                        else outcome.code
                    )
                    self._fail(span, str(kind), outcome.message)
            case Finish():
                self._finished(end)
            case None:
                pass
        if error is not None and end is None:
            self._fail_with(span, error)
        otel_context.detach(self._token)
        span.end()

    def _finished(self, end: Finish) -> None:
        """The loop's turn span at its `Finish`."""
        span = self.span
        attributes: dict[str, Any] = {
            **_usage(end.usage),
            "toolreel.finish_reason": end.reason.value,
            "toolreel.iterations": end.iterations,
            "toolreel.max_iterations_reached": end.max_iterations_reached,
        }
        if end.model_finish_reason is not None:
            attributes["gen_ai.response.finish_reasons"] = (end.model_finish_reason,)
        span.set_attributes(attributes)
        match end.outcome:
            case Failed(code=code, message=message):
                self._fail(span, code.value, message)
            case Cancelled():
                self._fail(span, "cancelled", "cancelled")
            case _:
                pass
