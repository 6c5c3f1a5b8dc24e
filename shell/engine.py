"""The shell's parts that toolreel's own extension packages build on: not an API for users.

toolreel.temporal carries out the core's effects in workflow activities,
toolreel.open_agent runs its client on the shell's runner, toolreel.web,
toolreel.testing, toolreel.mcp and the command line reuse the shell's plumbing.
What they share lives in the shell's private modules; this module is its one
public door, so that no package imports another's private module (the
`private_modules` contract in pyproject.toml). Names here may change with the
shell: a program should use `toolreel.shell`'s API instead.

- Running a session: `Runner` (carries out a session's effects), its `Observers`
  and `RunMetadata`, the `TurnTask` a client runs a turn in, `in_progress` (the
  conversation so far of a state mid-turn).
- Configs and checks: `loop_config` (options to a `LoopConfig`), `agent_config`
  (an agent definition's), `check_output` (a structured output validated), and
  `AGENT_OUTPUT_TOOL`, the output tool's name while an agent runs.
- Model and tool calls: `run_call`, `run_within`, `limiter_for`, `STREAM_ENDED`;
  `registry` (tools by name), `call_arguments`, `describe` (an exception as the
  model reads it), `tools_from_spec` (tools a `module:attr` names).
- Where models and journals come from: `MODEL_OVERRIDE` and `MODEL_OPENER`
  (toolreel.testing's overrides and recordings), `sources_opened` (options with
  their MCP servers opened), `open_location`, `DatabaseUrl`, `is_sqlite`.
- `submitted`: the `PromptSubmitted` a prompt (text and images) makes; `ToolOutput`, a tool
  result's text and images (toolreel.mcp gives an MCP tool's images to the model).
- Hooks as toolreel runs them: `hook_points` (a caller's hooks by core point),
  `call_hook` (one hook called, sync or async) and `decide` (the core `Decision`
  a list of hooks comes to).
- Who may call a served loop (web, MCP, A2A servers): `is_loopback`, `access_token` (the
  given token checked, else one made off loopback), `checked_token`; what body it takes:
  `json_depth` under `MAX_JSON_DEPTH`.
- Prices for the command line: `session_price` (a session's price: its budget's, else
  genai-prices'), `cost_of` (a usage at a price), `dollars` (a cost as printed).
"""

from __future__ import annotations

from ._access import access_token, checked_token, is_loopback
from ._agent import agent_config
from ._agent_output import check_output
from ._client import loop_config, sources_opened
from ._connection import AGENT_OUTPUT_TOOL, MODEL_OPENER, MODEL_OVERRIDE
from ._driver import STREAM_ENDED, limiter_for, run_call, run_within
from ._hooks import call_hook, decide, hook_points
from ._images import ToolOutput, submitted
from ._journal_files import DatabaseUrl, is_sqlite, open_location
from ._json_depth import MAX_JSON_DEPTH, json_depth
from ._prices import cost_of, dollars, session_price
from ._runner import Observers, RunMetadata, Runner, in_progress
from ._tools import call_arguments, describe, registry, tools_from_spec
from ._turn_task import TurnTask

__all__ = [
    "AGENT_OUTPUT_TOOL",
    "MAX_JSON_DEPTH",
    "MODEL_OPENER",
    "MODEL_OVERRIDE",
    "STREAM_ENDED",
    "DatabaseUrl",
    "Observers",
    "RunMetadata",
    "Runner",
    "ToolOutput",
    "TurnTask",
    "access_token",
    "agent_config",
    "call_arguments",
    "call_hook",
    "check_output",
    "checked_token",
    "cost_of",
    "decide",
    "describe",
    "dollars",
    "hook_points",
    "in_progress",
    "is_loopback",
    "is_sqlite",
    "json_depth",
    "limiter_for",
    "loop_config",
    "open_location",
    "registry",
    "run_call",
    "run_within",
    "session_price",
    "sources_opened",
    "submitted",
    "tools_from_spec",
]
