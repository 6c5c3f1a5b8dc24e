"""toolreel.shell: the public APIs that carry out the core's effects.

`Client` (one conversation: `query`, then `events()` or `wait()`; approvals),
`AgentOptions`/`tool`, `run()` for scripts, structured-output agents
(`AgentDefinition`, `OutputTool`, `execute_agent` with `AgentRunOptions`),
the `Connection` both share, images (`image`), replay and recordings
(`replay`, `verify`, `Recording`), what-if (`fork` with an `Edit`, `rerun` giving a
`RerunResult`), evaluations (`evaluate` reruns recorded sessions under new
options and checks each rerun: a check's `Verdict`; the checks and the report in
`toolreel.shell.checks`), and moving sessions between journals.

Namespaced public submodules hold the rest, each with its own `__all__`:
`toolreel.shell.errors` (every error toolreel raises, drawn as one tree),
`.hooks` (`HookDecision`, `PreToolUseEvent`, ...), `.callbacks` (the typed
callback protocols), `.telemetry` (the observer seam) and `.scripted` (offline
model stand-ins). Records of other layers are imported from their own package:
budgets from `toolreel.core.budget`, notices from `toolreel.core.notices`,
`Secret`, a failed agent's `AgentError` and `AgentSession` from
`toolreel.adapters`. `toolreel.shell.engine` (the `Runner`, its `Observers`, the
`TurnTask`, ...) is for toolreel's own extension packages, not for users.
"""

from typing import TYPE_CHECKING

from toolreel.adapters.lazy import lazy_names

from ._client import Client, RunResult, open_journal, run
from ._connection import Connection
from ._images import ImageSource, image
from ._options import AgentOptions, AgentRunOptions
from ._tools import Tool, tool

if TYPE_CHECKING:
    from ._agent import AgentDefinition, AgentFailure, AgentMetadata, AgentSuccess, execute_agent
    from ._agent_approval import agent_approvals, resume_agent
    from ._agent_output import OutputTool, Validator
    from ._eval import evaluate
    from ._fork import AgentFork, Edit, fork
    from ._recording import Recording
    from ._replay import Divergence, load_agent_session, replay, verify
    from ._rerun import RerunResult, ToolMode, rerun
    from ._transfer import export_session, import_session
    from ._verdict import Verdict

#: The names a one-conversation program does not use, and the module each comes from:
#: imported at first use (PEP 562 `__getattr__`), so `import toolreel.shell` stays cheap.
_LAZY = {
    **dict.fromkeys(
        ("AgentDefinition", "AgentFailure", "AgentMetadata", "AgentSuccess", "execute_agent"),
        "._agent",
    ),
    **dict.fromkeys(("agent_approvals", "resume_agent"), "._agent_approval"),
    **dict.fromkeys(("OutputTool", "Validator"), "._agent_output"),
    "evaluate": "._eval",
    **dict.fromkeys(("AgentFork", "Edit", "fork"), "._fork"),
    "Recording": "._recording",
    **dict.fromkeys(("Divergence", "load_agent_session", "replay", "verify"), "._replay"),
    **dict.fromkeys(("RerunResult", "ToolMode", "rerun"), "._rerun"),
    **dict.fromkeys(("export_session", "import_session"), "._transfer"),
    "Verdict": "._verdict",
}

__all__ = [
    "AgentDefinition",
    "AgentFailure",
    "AgentFork",
    "AgentMetadata",
    "AgentOptions",
    "AgentRunOptions",
    "AgentSuccess",
    "Client",
    "Connection",
    "Divergence",
    "Edit",
    "ImageSource",
    "OutputTool",
    "Recording",
    "RerunResult",
    "RunResult",
    "Tool",
    "ToolMode",
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
    "replay",
    "rerun",
    "resume_agent",
    "run",
    "tool",
    "verify",
]


__getattr__ = lazy_names(globals(), _LAZY)


def __dir__() -> list[str]:
    """Every name, the lazy ones included."""
    return sorted({*globals(), *__all__})
