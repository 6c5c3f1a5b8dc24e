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

from temporalio.contrib.workflow_streams import WorkflowStreamState

from toolreel.adapters import effect_record
from toolreel.core import Effect as StepEffect

#: The workflow's registered name, and the task queue a worker serves by default.
WORKFLOW = "toolreel.Session"
TASK_QUEUE = "toolreel"

CONFIGURE = "toolreel.configure"
CALL_MODEL = "toolreel.call_model"
RUN_TOOL = "toolreel.run_tool"
REFLECT = "toolreel.reflect"
VALIDATE = "toolreel.validate"
ASK_HOOK = "toolreel.ask_hook"
TELL_HOOK = "toolreel.tell_hook"


@dataclasses.dataclass(frozen=True)
class SessionSetup:
    """The worker's answer to `configure`: the config and what each tool allows.

    `prompt`: an agent run's, its definition's `build_prompt(input)` (None for a chat).
    """

    config: dict[str, Any]
    idempotent: list[str]
    timeouts: dict[str, float]
    model_timeout: float
    prompt: str | None = None


@dataclasses.dataclass(frozen=True)
class Carried:
    """Where the run before left a session it continued as new (always between turns).

    `state` is the idle `State` as JSON data (the new run goes on from it
    exactly: history, turn count, usage, budgets); `runs` the run ids before
    the new one, oldest first (their events come before its own); `seq` the
    events they folded; `finish` the last turn's `Finish` as JSON data;
    `stream` the session's stream from its last turn's first item on (what
    a caller may still be reading; shell/temporal/_told.py).
    """

    setup: SessionSetup
    state: dict[str, Any]
    runs: list[str]
    seq: int
    finish: dict[str, Any] | None = None
    stream: WorkflowStreamState | None = None


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
    set by the workflow then, never by a caller. `agent`: an agent run of the
    definition the workers hold under that name, on `input` (JSON data); its
    prompt is the definition's `build_prompt(input)`. `stream_seconds`: how
    often a model call's worker puts the text the model wrote since on the
    session's stream, for its callers to read while the call runs (0: never;
    they read it once the call is over).
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
    agent: str | None = None
    input: Any = None
    stream_seconds: float = 0.2


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
class SessionStatus:
    """Where a session workflow stands, for its callers (the `status` query).

    `phase` as `Phase` names it ("configuring" before the worker's config came);
    `turns` the turns begun so far (the running or last one's number);
    `iteration` the running turn's model calls; `approvals` the calls held for a
    human (`ApprovalRequested` JSON data); `paused_round` the ids of every call of
    the round a paused turn holds, decided or not.
    """

    phase: str
    turns: int = 0
    iteration: int = 0
    approvals: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    paused_round: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class HookRequest:
    """An `AskHook` or `TellHook` effect (JSON data) and the history a hook is shown
    (`agent`: the agent run's, if it is one)."""

    effect: dict[str, Any]
    history: list[dict[str, Any]]
    agent: str | None = None


@dataclasses.dataclass(frozen=True)
class ModelCall:
    """A `CallModel`'s request (JSON data), and a structured output's tool (for test models);
    `stream_seconds`: how often the worker puts the text so far on the stream (0: never)."""

    request: dict[str, Any]
    output_tool: str = ""
    stream_seconds: float = 0.0


@dataclasses.dataclass(frozen=True)
class ToolRun:
    """One call (JSON data) to run, or to reflect on; `agent`: the agent run's whose tools
    (and output tool) run it (None: the worker's own tools)."""

    call: dict[str, Any]
    agent: str | None = None


@dataclasses.dataclass(frozen=True)
class OutputCheck:
    """An agent run's `Validate`: the agent's name, the attempt and the output (JSON text)."""

    agent: str
    attempt: int
    output: str


def effect_digest(effect: StepEffect) -> str:
    """A short digest of an effect as the journal records it (part of its activity id).

    Replaying a history under a reducer that would issue a different effect
    then schedules an activity of another id: Temporal's nondeterminism error.
    """
    text = json.dumps(effect_record(effect), sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
