"""The logging watcher of a turn: what the "toolreel" loggers say about a run.

Every turn is watched by a `LogTurn` (shell/_telemetry.py makes one per turn).
Loggers (all children of "toolreel", which has only a `NullHandler`: nothing is
printed unless the application configures logging):

- `toolreel.loop`: WARNING when a turn (or an agent attempt) stops at the
  iteration cap; INFO per round (number, tool names, duration); DEBUG when a
  turn ends (reason, iterations, usage).
- `toolreel.model`: DEBUG per model request (provider, model, message and tool
  counts; never headers or keys) and per response (finish reason, usage);
  WARNING on every retry (attempt, delay, error).
- `toolreel.tools`: DEBUG per tool call (name, id, outcome, duration).

Every text that could carry a key (an error message, a tool's error, a base
URL) passes through the run's `Redactor` first, and the records through the
"toolreel" loggers' redacting filter (adapters/_redact.py) besides.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolreel.adapters import AgentError, ErrorCode, agent_outcome
from toolreel.adapters.redaction import logger
from toolreel.core import (
    CallModel,
    Finish,
    ModelCallFailed,
    ModelResponded,
    ToolCall,
    ToolFinished,
    ToolTimedOut,
)

if TYPE_CHECKING:
    from ._telemetry import ModelOutcome, ToolOutcome, TurnEnd, TurnInfo

__all__ = ["LogTurn", "loop_log", "model_log", "tools_log"]

loop_log = logger("toolreel.loop")
model_log = logger("toolreel.model")
tools_log = logger("toolreel.tools")


def _short(text: str, limit: int = 200) -> str:
    """`text` cut to `limit` characters, for a log line."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class LogTurn:
    """Logs one turn on the "toolreel" loggers (see the module docstring for what and when)."""

    def __init__(self, info: TurnInfo) -> None:
        """A turn described by `info`, not started yet."""
        self.info = info
        self._wait: float | None = None  # the backoff before the failing call's retry
        self._round_began: float | None = None
        self._round_iteration = 0
        self._round_tools: list[str] = []
        self._tool_began: dict[str, float] = {}

    def model_started(self, call: CallModel) -> None:
        """DEBUG the request: provider, model, counts (never a header or a key)."""
        self._end_round()
        if model_log.isEnabledFor(logging.DEBUG):
            request = call.request
            model_log.debug(
                "model request: provider=%s model=%s iteration=%d retry=%d messages=%d tools=%d%s",
                self.info.provider or "?",
                request.model,
                call.iteration,
                call.retry,
                len(request.messages),
                len(request.tools),
                f" base_url={self.info.base_url}" if self.info.base_url else "",
            )

    def model_ended(self, call: CallModel, outcome: ModelOutcome) -> None:
        """DEBUG the response, or WARNING a failure that is retried; a round may begin."""
        wait, self._wait = self._wait, None
        match outcome:
            case ModelResponded(finish_reason=reason, usage=usage):
                self._round_began = time.monotonic()
                self._round_iteration = call.iteration
                model_log.debug(
                    "model response: finish_reason=%s input_tokens=%d output_tokens=%d",
                    reason,
                    usage.input_tokens,
                    usage.output_tokens,
                )
            case ModelCallFailed(message=message) if wait is not None:
                model_log.warning(
                    "model call failed (%s); retry %d in %.2f s",
                    self._redact(message),
                    call.retry + 1,
                    wait,
                )
            case _:
                pass

    def tool_started(self, call: ToolCall) -> None:
        """Note the call's start and name for its round."""
        self._tool_began[call.id] = time.monotonic()
        self._round_tools.append(call.name)

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """DEBUG the call: name, id, outcome (an error's text redacted), duration."""
        began = self._tool_began.pop(call.id, None)
        if not tools_log.isEnabledFor(logging.DEBUG):
            return
        took = time.monotonic() - began if began is not None else 0.0
        if isinstance(outcome, ToolFinished):
            status = "error: " + self._redact(outcome.output) if outcome.is_error else "ok"
        elif isinstance(outcome, ToolTimedOut):
            status = f"error: timed out after {outcome.seconds:g} s"
        else:
            status = f"stopped ({type(outcome).__name__})"
        tools_log.debug("tool %s [%s] %s (%.3f s)", call.name, call.id, status, took)

    def retry_waiting(self, seconds: float) -> None:
        """Keep the backoff: `model_ended` warns of the retry (attempt, delay, error)."""
        self._wait = seconds

    def round_finished(self, iteration: int, names: Sequence[str]) -> None:
        """INFO the round: number, tool names, duration."""
        self._round_iteration = iteration
        self._round_tools = list(names)
        self._end_round()

    def ended(self, end: TurnEnd, error: BaseException | None) -> None:
        """WARNING at the iteration cap; DEBUG how the turn ended."""
        self._end_round()
        match end:
            case Finish(attempts=attempts) if attempts is not None:
                outcome = agent_outcome(end)
                if isinstance(outcome, AgentError) and outcome.code is ErrorCode.MAX_ITERATIONS:
                    loop_log.warning(
                        "agent attempt %d stopped at the iteration cap (%s)",
                        outcome.context.attempt,
                        self._redact(outcome.message),
                    )
                code = outcome.code.value if isinstance(outcome, AgentError) else "output"
                loop_log.debug(
                    "agent run ended: %s after %d attempts, %d iterations",
                    code,
                    attempts.number,
                    end.iterations,
                )
            case Finish():
                if end.max_iterations_reached:
                    loop_log.warning(
                        "Hit max_tool_iterations (%d): the turn ended %s. "
                        "Increase max_tool_iterations if this is expected.",
                        end.iterations,
                        end.reason.value,
                    )
                loop_log.debug(
                    "turn ended: %s after %d iterations (input_tokens=%d output_tokens=%d)",
                    end.reason.value,
                    end.iterations,
                    end.usage.input_tokens,
                    end.usage.output_tokens,
                )
            case None:
                if error is not None:
                    loop_log.debug("turn stopped by %s", type(error).__name__)

    def _end_round(self) -> None:
        """INFO the round whose tools ran since the last response, if any (then forget it)."""
        names, self._round_tools = self._round_tools, []
        began, self._round_began = self._round_began, None
        if not names:
            return
        took = time.monotonic() - began if began is not None else 0.0
        loop_log.info("round %d: %s (%.2f s)", self._round_iteration, ", ".join(names), took)

    def _redact(self, text: str) -> str:
        """`text` with the run's keys masked, cut to a log line's length."""
        return _short(self.info.redactor.text(text))
