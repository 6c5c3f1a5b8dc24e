"""toolreel.shell: the effect interpreter and the public APIs.

`Client` (one conversation: `query`, then `events()` or `wait()`; approvals),
`AgentOptions`/`tool`, `run()` for scripts,
structured-output agents (`AgentDefinition`, `OutputTool`, `execute_agent`
with `AgentRunOptions`; a failure's `AgentError`, its `ErrorCode` and
`ErrorContext`), the `Connection` both share (its key a `Secret`), the typed
callback protocols of each API (`OnToolCall`, ..., `OnAgentToolCall`, ...),
hooks (`HookDecision`, `PreToolUseEvent`, ...), budgets (`Budget`, `Price`, the
`OverBudget` outcome, `Spending`, the `UsageReported` notice), the `Runner` that
carries out the core's effects (for a chat session and an agent run alike) and the
`TurnTask` a client runs it in. Evaluations: `evaluate` reruns recorded
sessions under new options and checks each rerun (a check's `Verdict`; the
checks and the report in `toolreel.shell.checks`).
"""

from toolreel.adapters import Secret
from toolreel.adapters._agent_outcome import (
    AgentError,
    AgentOutput,
    ErrorCode,
    ErrorContext,
    ErrorPhase,
)
from toolreel.adapters._transcript import render_agent_transcript
from toolreel.core import (
    Budget,
    BudgetPolicy,
    BudgetScope,
    ImagePart,
    OverBudget,
    Price,
    Spending,
    UsageReported,
)

from ._agent import AgentDefinition, AgentFailure, AgentMetadata, AgentSuccess, execute_agent
from ._agent_approval import agent_approvals, resume_agent
from ._agent_output import OutputTool, Validator
from ._callbacks import (
    OnAgentNotice,
    OnAgentToolCall,
    OnAgentToolResult,
    OnAttemptStart,
    OnFinish,
    OnNotice,
    OnRound,
    OnToolCall,
    OnToolResult,
    OnValidationFailure,
)
from ._client import Client, RunResult, open_journal, run
from ._connection import Connection
from ._errors import (
    ApprovalPending,
    ConfigError,
    ContentRefused,
    JournalCorrupt,
    JournalError,
    JournalUnavailable,
    NotOpen,
    ReplayError,
    RerunStopped,
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
from ._eval import evaluate
from ._fork import Edit, fork
from ._hooks import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    HookDecision,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
)
from ._images import ImageSource, image
from ._options import AgentOptions, AgentRunOptions
from ._recording import Recording, RequestMismatch
from ._replay import AgentSession, Divergence, ReplayDiverged, load_agent_session, replay, verify
from ._rerun import RerunResult, ToolMode, rerun
from ._runner import Observers, RunMetadata, Runner
from ._tools import Tool, tool
from ._transfer import export_session, import_session
from ._turn_task import TurnTask
from ._verdict import Verdict

__all__ = [
    "HOOK_POST_TOOL_USE",
    "HOOK_PRE_TOOL_USE",
    "HOOK_USER_PROMPT_SUBMIT",
    "AgentDefinition",
    "AgentError",
    "AgentFailure",
    "AgentMetadata",
    "AgentOptions",
    "AgentOutput",
    "AgentRunOptions",
    "AgentSession",
    "AgentSuccess",
    "ApprovalPending",
    "Budget",
    "BudgetPolicy",
    "BudgetScope",
    "Client",
    "ConfigError",
    "Connection",
    "ContentRefused",
    "Divergence",
    "Edit",
    "ErrorCode",
    "ErrorContext",
    "ErrorPhase",
    "HookDecision",
    "ImagePart",
    "ImageSource",
    "JournalCorrupt",
    "JournalError",
    "JournalUnavailable",
    "NotOpen",
    "Observers",
    "OnAgentNotice",
    "OnAgentToolCall",
    "OnAgentToolResult",
    "OnAttemptStart",
    "OnFinish",
    "OnNotice",
    "OnRound",
    "OnToolCall",
    "OnToolResult",
    "OnValidationFailure",
    "OutputTool",
    "OverBudget",
    "PostToolUseEvent",
    "PreToolUseEvent",
    "Price",
    "Recording",
    "ReplayDiverged",
    "ReplayError",
    "RequestMismatch",
    "RerunResult",
    "RerunStopped",
    "RunFailed",
    "RunMetadata",
    "RunResult",
    "Runner",
    "Secret",
    "SessionBusy",
    "SessionError",
    "SessionNotFound",
    "Spending",
    "StepError",
    "Tool",
    "ToolMode",
    "ToolreelError",
    "TurnInProgress",
    "TurnTask",
    "UnknownApproval",
    "UnknownToolCall",
    "UsageError",
    "UsageReported",
    "UserPromptSubmitEvent",
    "Validator",
    "Verdict",
    "agent_approvals",
    "evaluate",
    "execute_agent",
    "export_session",
    "fork",
    "image",
    "import_session",
    "load_agent_session",
    "open_journal",
    "render_agent_transcript",
    "replay",
    "rerun",
    "resume_agent",
    "run",
    "tool",
    "verify",
]
