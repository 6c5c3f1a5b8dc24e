"""Journals of bfd8293's agent runs, read as today's: their config, and what replay compares.

Until the one reducer, a structured-output agent run had a reducer of its own
(`agent_step`), whose journals record an `AgentConfig` and effects of that
reducer's vocabulary. Today the same run is a turn of `step` whose config's
`output` is a `PlainOutput` or `ReflectiveOutput`; such a journal is upgraded
here, at its edge, and nowhere else:

- **The config.** An `AgentConfig` record (it has `helpers`) reads as a
  `LegacyAgentConfig`: a `LoopConfig` with `tools` = the helpers,
  `max_iterations` = `max_iterations_per_attempt`, the output spec with its
  `max_attempts`, no hooks (bfd8293 asked an agent's hooks in the shell and
  journaled their decisions inside the tool results). It writes back in its
  old shape (an export keeps it), and `current(config)` is the same config as
  a plain `LoopConfig`, which a resumed run records from its last old step on.
- **The events** need nothing: they are today's, and `step` folds them. The
  one fact only those journals hold — a PreToolUse `Ask` fed for a helper call
  already issued — is rule 17's last sentence (core/_step.py).
- **Reason codes.** Results the core made carry a `reason` today; older
  journals recorded none. A request's digest leaves reasons out, and a
  step whose records differ only by them is no divergence (`unreasoned`).
- **Replay** (`legacy_differs`). Those steps recorded other effects than
  `step` makes: no `Persist`, no loop notices, no hooks, and a `FinishAgent`
  instead of a `Finish`. So under a `LegacyAgentConfig` a step's effects are
  compared on what the old reducer said too, which is what replay must prove:
  each step's `CallModel` (the request: messages, tools, settings), `RunTool`,
  `Reflect`, `Validate`, `StartTimer` and `AwaitApproval`, and the
  `AttemptStarted` / `ValidationFailed` notices, in order; and the recorded
  `FinishAgent` against the new `Finish`: the outcome as the agent API reports
  it (code, message, context), usage, attempts, iterations and the whole
  conversation. What the old reducer never said is not compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from toolreel.core import ChatMessage, Effect, Finish, LoopConfig

from ._agent_outcome import AgentOutcome, agent_outcome
from ._serde import structure, unstructure

#: The effect kinds both reducers made, compared under a `LegacyAgentConfig`.
_SHARED = frozenset({"CallModel", "RunTool", "Reflect", "Validate", "StartTimer", "AwaitApproval"})
#: The notices both told.
_NOTICES = frozenset({"AttemptStarted", "ValidationFailed"})


@attrs.frozen(kw_only=True, repr=False, eq=False)
class LegacyAgentConfig(LoopConfig):
    """A `LoopConfig` read from a bfd8293 agent run's `AgentConfig` (module docstring)."""


def is_legacy(data: dict[str, Any]) -> bool:
    """Whether config data is an `AgentConfig` as bfd8293 wrote it."""
    return "helpers" in data or "max_iterations_per_attempt" in data


def legacy_config(data: dict[str, Any]) -> LegacyAgentConfig:
    """An old `AgentConfig` record as today's config."""
    fields = dict(data)
    output = {**fields.pop("output"), "max_attempts": fields.pop("max_attempts", 3)}
    fields["tools"] = fields.pop("helpers", [])
    fields["max_iterations"] = fields.pop("max_iterations_per_attempt", 15)
    fields["output"] = output
    plain = structure(fields, LoopConfig)
    return LegacyAgentConfig(**{f.name: getattr(plain, f.name) for f in attrs.fields(LoopConfig)})


def current(config: LoopConfig) -> LoopConfig:
    """The same config as a plain `LoopConfig` (what a resumed old run records)."""
    if type(config) is LoopConfig:
        return config
    return LoopConfig(**{f.name: getattr(config, f.name) for f in attrs.fields(LoopConfig)})


def legacy_data(config: LegacyAgentConfig) -> dict[str, Any]:
    """The config in the shape bfd8293 wrote it (an `AgentConfig`)."""
    data: dict[str, Any] = unstructure(current(config))
    output = dict(data["output"])
    max_attempts = output.pop("max_attempts")
    return {
        "output": output,
        "helpers": data["tools"],
        "model": data["model"],
        "system_prompt": data["system_prompt"],
        "max_attempts": max_attempts,
        "max_iterations_per_attempt": data["max_iterations"],
        "tool_choice": data["tool_choice"],
        "max_tokens": data["max_tokens"],
        "temperature": data["temperature"],
        "retry": data["retry"],
        "budget": data["budget"],
        "approval_required": data["approval_required"],
    }


def legacy_differs(
    recorded: Sequence[dict[str, Any]],
    effects: Sequence[Effect],
    replayed: Sequence[dict[str, Any]],
    history: tuple[ChatMessage, ...],
    config: LoopConfig,
) -> bool:
    """Whether a step of an old agent run diverges (module docstring: "Replay").

    `replayed` are the records of `effects`; `history` the conversation after the step.
    """
    old = [data for data in recorded if _shared(data)]
    old += [_ended(data) for data in recorded if data.get("type") == "FinishAgent"]
    new = [data for data in replayed if _shared(data)]
    new += [_ended_now(e, history, config) for e in effects if isinstance(e, Finish)]
    return bool(old != unreasoned(new))  # (bfd8293 recorded results without reason codes)


def _is_result(data: dict[str, Any]) -> bool:
    """Whether recorded data is a `ToolResult`'s."""
    return "call_id" in data and "name" in data and ("content" in data or "content_length" in data)


def unreasoned(data: Any) -> Any:
    """Recorded data with every tool result's `reason` left out: what journals written
    before reason codes (bfd8293's among them) recorded, to compare with them."""
    if isinstance(data, dict):
        kept = {key: unreasoned(value) for key, value in data.items()}
        if _is_result(kept):
            kept.pop("reason", None)
        return kept
    if isinstance(data, list | tuple):
        return [unreasoned(item) for item in data]
    return data


def _shared(data: dict[str, Any]) -> bool:
    """Whether a record is of a kind both reducers made."""
    kind = data.get("type")
    return kind in _SHARED or (kind == "Emit" and data["notice"].get("type") in _NOTICES)


def _ended(data: dict[str, Any]) -> dict[str, Any]:
    """What a recorded `FinishAgent` says."""
    keys = ("outcome", "usage", "attempts", "iterations", "history")
    return {"end": {key: data.get(key) for key in keys}}


def _ended_now(
    finish: Finish, history: tuple[ChatMessage, ...], config: LoopConfig
) -> dict[str, Any]:
    """What a `FinishAgent` would have said of today's `Finish`."""
    assert finish.attempts is not None
    outcome: AgentOutcome = agent_outcome(finish, config)
    return {
        "end": {
            "outcome": unstructure_outcome(outcome),
            "usage": unstructure(finish.usage),
            "attempts": finish.attempts.number,
            "iterations": finish.iterations,
            "history": unstructure(history),
        }
    }


def unstructure_outcome(outcome: AgentOutcome) -> dict[str, Any]:
    """An agent outcome as tagged data (`"type": "AgentOutput"` or `"AgentError"`)."""
    data: dict[str, Any] = unstructure(outcome)
    data["type"] = type(outcome).__name__
    return data
