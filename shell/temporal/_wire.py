"""What crosses the wire between a caller, the session workflow and its activities.

Temporal's JSON converter carries dataclasses and plain JSON data; core values
travel as toolreel's own JSON data (adapters/_serde.py), so the same converter
that writes journals decides what a workflow history holds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from toolreel.adapters._journal import StepEffect, effect_record

#: The workflow's registered name, and the task queue a worker serves by default.
WORKFLOW = "toolreel.Session"
TASK_QUEUE = "toolreel"

CONFIGURE = "toolreel.configure"
CALL_MODEL = "toolreel.call_model"
RUN_TOOL = "toolreel.run_tool"
ASK_HOOK = "toolreel.ask_hook"
TELL_HOOK = "toolreel.tell_hook"


@dataclasses.dataclass(frozen=True)
class SessionStart:
    """How a session workflow starts: its first prompt (if any) and what it may change.

    `one_shot`: the workflow completes once the turns it was given are over
    (`toolreel run`); otherwise it waits for prompts until closed (a chat).
    `auto_execute`: the workers run the tools (False: manual mode, the caller
    sends each result as an `event` signal). `heartbeat_seconds`: how long a
    silent activity may go before Temporal counts its worker as dead and acts
    (retries, or an interrupted tool).
    """

    prompt: str | None = None
    system_prompt: str | None = None
    max_iterations: int | None = None
    one_shot: bool = True
    auto_execute: bool = True
    heartbeat_seconds: float = 10.0
    model_attempts: int = 3


@dataclasses.dataclass(frozen=True)
class SessionSetup:
    """The worker's answer to `configure`: the loop config and what each tool allows."""

    config: dict[str, Any]
    idempotent: list[str]
    timeouts: dict[str, float]
    model_timeout: float


@dataclasses.dataclass(frozen=True)
class SessionRecord:
    """A session as the workflow holds it: its config and every event folded, in order.

    `finish` is the last turn's `Finish` as JSON data (None before any turn ended).
    """

    config: dict[str, Any]
    events: list[dict[str, Any]]
    finish: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class HookRequest:
    """An `AskHook` or `TellHook` effect (JSON data) and the history a hook is shown."""

    effect: dict[str, Any]
    history: list[dict[str, Any]]


def effect_digest(effect: StepEffect) -> str:
    """A short digest of an effect as the journal records it (part of its activity id).

    Replaying a history under a reducer that would issue a different effect
    then schedules an activity of another id: Temporal's nondeterminism error.
    """
    text = json.dumps(effect_record(effect), sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
