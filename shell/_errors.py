"""The one error tree: everything toolreel raises on purpose is a `ToolreelError`.

    ToolreelError                       (toolreel.core)  anything raised on purpose
    ├── UsageError                      (toolreel.core)  the caller misused the API
    │   ├── StepError                   (toolreel.core)  an event impossible in this phase
    │   ├── ConfigError (ValueError)    (toolreel.core)  an option value not allowed
    │   ├── NotOpen (RuntimeError)                        used without `async with`
    │   ├── TurnInProgress (RuntimeError)                 a query while a turn runs
    │   ├── UnknownToolCall (ValueError)                  a result for no awaited call
    │   │   └── UnknownApproval                           a decision for no held call
    │   ├── SessionNotFound (LookupError) (adapters)     no such session in the journal
    │   ├── ContentRefused (ValueError) (adapters)       images a model cannot take
    │   ├── NothingToReceive (RuntimeError) (open_agent)  receive_messages() before query()
    │   ├── ResultsOwed (RuntimeError)  (open_agent)     a prompt while calls await results
    │   └── ContentTypeError (TypeError) (open_agent)    a tool result not str/dict/list
    ├── SessionError                    (adapters)
    │   ├── SessionNotFound
    │   └── SessionBusy                 (adapters)       another writer owns the session
    ├── JournalError                    (adapters)
    │   ├── JournalCorrupt              (adapters)       damaged data: file, session, step
    │   └── JournalUnavailable          (adapters)       cannot open, or locked too long
    ├── DecodeError (ValueError)        (adapters)       text that is not an event's JSON
    ├── RunFailed                                         a turn that finished FAILED
    ├── ApprovalPending                                   run() paused: calls await approval
    ├── PromptBlocked (RuntimeError)    (open_agent)     a UserPromptSubmit hook blocked
    ├── ModelError (RuntimeError)       (open_agent)     the model call failed
    ├── ConfigFileError (+ its OSError/yaml.YAMLError) (open_agent.config)  an unusable config file
    ├── MCPConnectError (ConnectionError) (mcp)      an MCP server that cannot be started/reached
    ├── MCPToolError                (mcp)            an MCP tool called directly answered an error
    ├── TemporalError               (temporal)       a Temporal server or workflow that cannot serve
    └── ReplayError (AssertionError)                      a recording does not match
        ├── ReplayDiverged                                replay(strict) found a divergence
        ├── RequestMismatch                               rerun asked something unrecorded
        └── RerunStopped                                  a strict rerun met an unrecorded call

Messages are one line saying what happened and what to do. Anything else
reaching a caller of a public function is a bug.
"""

from __future__ import annotations

from toolreel.adapters._errors import (
    ContentRefused,
    DecodeError,
    JournalCorrupt,
    JournalError,
    JournalUnavailable,
    SessionBusy,
    SessionError,
    SessionNotFound,
)
from toolreel.core import (
    ApprovalRequested,
    ConfigError,
    Finish,
    StepError,
    ToolCall,
    ToolreelError,
    UsageError,
)

__all__ = [
    "ApprovalPending",
    "ConfigError",
    "ContentRefused",
    "DecodeError",
    "JournalCorrupt",
    "JournalError",
    "JournalUnavailable",
    "NotOpen",
    "ReplayError",
    "RerunStopped",
    "RunFailed",
    "SessionBusy",
    "SessionError",
    "SessionNotFound",
    "StepError",
    "ToolreelError",
    "TurnInProgress",
    "UnknownApproval",
    "UnknownToolCall",
    "UsageError",
]


class NotOpen(UsageError, RuntimeError):
    """A Client used before `async with Client(...)` opened it (or after it closed)."""


class TurnInProgress(UsageError, RuntimeError):
    """A new prompt while a turn still runs."""


class UnknownToolCall(UsageError, ValueError):
    """A manual result for a call that awaits none.

    Its text is the core's (`toolreel.core.misuse`): the `StepError` `step` would
    raise for the event, which is its `__cause__`.
    """


class UnknownApproval(UnknownToolCall):
    """An approval or denial for a call that is not held for one (unknown, or decided).

    Worded by the core, as `UnknownToolCall` is.
    """


class ApprovalPending(ToolreelError):
    """A turn (or agent run) paused for approval where the caller cannot wait (`run()`).

    Continue it with `Client.resume(session_id, options)`, then `approve` / `deny`.
    """

    def __init__(
        self,
        session_id: str,
        requests: tuple[ApprovalRequested, ...],
        *,
        how: str = "Client.resume(session_id, options), then approve() or deny() each call",
    ) -> None:
        """Name the session, the calls that wait and how to go on (an agent run: `resume_agent`)."""
        calls = ", ".join(f"{r.call.name} ({r.call.id})" for r in requests)
        super().__init__(
            f"session {session_id} waits for approval of {calls}: resume it with {how}"
        )
        self.session_id = session_id
        self.requests = requests


class RunFailed(ToolreelError):
    """The turn finished FAILED: a model error, retries exhausted, or max iterations (RAISE)."""

    def __init__(self, finish: Finish) -> None:
        """Say why, in the provider's words where there are any."""
        error = finish.error
        detail = f"{error.kind}: {error.message}" if error else "failed"
        super().__init__(detail)
        self.finish = finish


class ReplayError(ToolreelError, AssertionError):
    """A recording and the program disagree (AssertionError, so pytest shows it as a failure)."""


class RerunStopped(ReplayError):
    """A session rerun with tools="strict" met a tool call no recording has (shell/_rerun.py)."""

    def __init__(self, call: ToolCall) -> None:
        """Name the call and what to do instead."""
        super().__init__(
            f"the rerun stopped: no recording has a call of {call.name} with arguments "
            f"{call.arguments} (tools='recorded' answers it with an error, 'live' runs it)"
        )
        self.call = call
