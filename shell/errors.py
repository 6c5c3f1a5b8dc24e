"""The errors toolreel's APIs raise, in one place: everything raised on purpose is a
`ToolreelError`. The tree, with the package each class comes from:

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
        └── RequestMismatch                               rerun asked something unrecorded

Messages are one line saying what happened and what to do. Anything else
reaching a caller of a public function is a bug.

`RequestMismatch` and `ReplayDiverged` carry what did not match (see
`Recording` and `replay`); `RunFailed` and `ApprovalPending` the turn's `Finish`.
"""

from __future__ import annotations

from ._errors import (
    ApprovalPending,
    ConfigError,
    ContentRefused,
    DecodeError,
    JournalCorrupt,
    JournalError,
    JournalUnavailable,
    NotOpen,
    ReplayError,
    RunFailed,
    SessionBusy,
    SessionError,
    SessionNotFound,
    StepError,
    ToolreelError,
    TurnInProgress,
    UnknownApproval,
    UnknownToolCall,
    UsageError,
)
from ._recording import RequestMismatch
from ._replay import ReplayDiverged

__all__ = [
    "ApprovalPending",
    "ConfigError",
    "ContentRefused",
    "DecodeError",
    "JournalCorrupt",
    "JournalError",
    "JournalUnavailable",
    "NotOpen",
    "ReplayDiverged",
    "ReplayError",
    "RequestMismatch",
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
