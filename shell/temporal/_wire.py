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
class SessionSetup:
    """The worker's answer to `configure`: the loop config and what each tool allows."""

    config: dict[str, Any]
    idempotent: list[str]
    timeouts: dict[str, float]
    model_timeout: float


@dataclasses.dataclass(frozen=True)
class Carried:
    """Where the run before left a session it continued as new (always between turns).

    `state` is the idle `State` as JSON data (the new run goes on from it
    exactly: history, turn count, usage, budgets); `runs` the run ids before
    the new one, oldest first (their events come before its own); `seq` the
    events they folded; `finish` the last turn's `Finish` as JSON data.
    """

    setup: SessionSetup
    state: dict[str, Any]
    runs: list[str]
    seq: int
    finish: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class SessionStart:
    """How a session workflow starts: its first prompt (if any) and what it may change.

    `one_shot`: the workflow completes once the turns it was given are over
    (`toolreel run`); otherwise it waits for prompts until closed (a chat).
    `auto_execute`: the workers run the tools (False: manual mode, the caller
    sends each result as an `event` signal). `heartbeat_seconds`: how long a
    silent activity may go before Temporal counts its worker as dead and acts
    (retries, or an interrupted tool). `continue_after`: between turns, once
    a run has folded this many events or its history holds this many, the
    session continues as new (also when Temporal suggests it); `carried` is
    set by the workflow then, never by a caller.
    """

    prompt: str | None = None
    system_prompt: str | None = None
    max_iterations: int | None = None
    one_shot: bool = True
    auto_execute: bool = True
    heartbeat_seconds: float = 10.0
    model_attempts: int = 3
    continue_after: int = 10_000
    carried: Carried | None = None


@dataclasses.dataclass(frozen=True)
class SessionRecord:
    """A session as the workflow holds it: its config and every event folded, in order.

    `finish` is the last turn's `Finish` as JSON data (None before any turn ended).
    `runs`: the runs this one continued, oldest first, whose events come before
    `events` (the `record` query answers for its own run; `fetch_record` joins them).
    """

    config: dict[str, Any]
    events: list[dict[str, Any]]
    finish: dict[str, Any] | None = None
    runs: list[str] = dataclasses.field(default_factory=list)


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


#: The agent run workflow's registered name, and its activities'.
AGENT_WORKFLOW = "toolreel.Agent"
AGENT_CONFIGURE = "toolreel.agent.configure"
AGENT_CALL_MODEL = "toolreel.agent.call_model"
AGENT_RUN_TOOL = "toolreel.agent.run_tool"
AGENT_REFLECT = "toolreel.agent.reflect"
AGENT_VALIDATE = "toolreel.agent.validate"


@dataclasses.dataclass(frozen=True)
class AgentStart:
    """How an agent run starts: the agent's name on the workers and its input (JSON data).

    The workers hold the definition (`session_worker(..., agents={name: definition})`);
    its `build_prompt(input)` is the run's prompt.
    """

    agent: str
    input: Any = None
    heartbeat_seconds: float = 10.0
    model_attempts: int = 3


@dataclasses.dataclass(frozen=True)
class AgentSetup:
    """The worker's answer to the agent's `configure`: the config, prompt and tool settings."""

    config: dict[str, Any]
    prompt: str
    idempotent: list[str]
    timeouts: dict[str, float]
    model_timeout: float


@dataclasses.dataclass(frozen=True)
class AgentCall:
    """One of an agent run's effects for a worker: the agent's name and the effect's data."""

    agent: str
    data: dict[str, Any]
