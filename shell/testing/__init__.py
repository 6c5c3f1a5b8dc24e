"""toolreel.testing: stand-in models for scripts and tests, and a pytest plugin for testing
your own agents (loaded automatically; importing this package needs pytest only for it).

Stand-in models (no key, no network beyond 127.0.0.1):
- `ScriptedServer(script)`: an OpenAI-compatible server on 127.0.0.1 answering
  from a script — a list of replies (`text(...)`, `tool_calls(...)`,
  `http_error(...)`, `cut_off(...)`: `Reply`s), or a function of the request
  body; point `AgentOptions(base_url=server.url, model=...)` at it.
  `ScriptedServer(calculator)` is the calculator model `make demo` talks to.
- `TestModel()`, `FunctionModel(fn)`: model ports that need no script (pass
  them as `model=`); `call`, `Call`, `ToolCalls`, `ModelInfo` serve a function model.
- `override(model=...)`: every Client, `run` and agent made inside uses that model.

Fixtures:
- `scripted_model`: `scripted_model([text("hi"), tool_calls(...), http_error(429, ...)])`
  gives a model that says exactly that, one reply per call — served over real
  HTTP on 127.0.0.1 through the OpenAI-compatible adapter (default), or
  in-process with `http=False`. Use `scripted.options(...)` for the options
  and pass `model=scripted.model` to `Client`/`run`.
- `recorded_session`: `recorded_session("tests/recordings/calc.jsonl")` gives a
  `Recording` that replays a recorded session offline (`await rec.rerun(options)`;
  an agent run's: `await rec.rerun(options, agent=definition)`).
- `transcript_snapshot`: syrupy's `snapshot` storing a session as its transcript
  (a `Session` or an `AgentSession`, or what made one: a `Client`, a `RunResult`,
  an `AgentSuccess`/`AgentFailure`); `.hide("usage", "ids", "timings", "retries")`
  leaves volatile parts out; a failure shows the transcripts' unified diff first.
- `toolreel_recording`: a test marked `@pytest.mark.toolreel_recording("name")`
  records every model call its code makes into recordings/name.jsonl, or
  replays them from it (`--toolreel-record=once|new|all|none`; see
  _record_modes.py); the fixture is its `Reel` (`.options(...)`, `.model`).
- `toolreel_override`: every Client, `run` and `execute_agent` of the test uses a
  `TestModel()` (or the model given by indirect parametrization; swap it with
  `toolreel_override.use(model)`), as under `override(model=...)`.
- Network guard: `@pytest.mark.toolreel_offline`, or `pytest --toolreel-offline`
  for every test, makes any HTTP call to a host other than 127.0.0.1/localhost
  fail loudly.
"""

from __future__ import annotations

from toolreel.shell.scripted import (
    Call,
    FunctionModel,
    ModelInfo,
    Reply,
    ScriptedServer,
    TestModel,
    ToolCalls,
    calculator,
    call,
    cut_off,
    http_error,
    text,
    tool_calls,
)

from ._guard import NetworkBlocked
from ._override import Override, override, overriding
from ._reel import Reel
from ._scripted_model import MakeScriptedModel, OpenRecording, ScriptedModel

try:
    import pytest  # noqa: F401 - only to know whether the plugin can load
except ModuleNotFoundError:  # a script without pytest: the models above, no plugin
    pass
else:
    # The plugin's fixtures and hooks: pytest finds them here (the `toolreel` entry point).
    from ._plugin import (  # noqa: F401
        _toolreel_network_guard,
        pytest_addoption,
        pytest_configure,
        recorded_session,
        scripted_model,
        toolreel_override,
        transcript_snapshot,
    )
    from ._record_modes import (  # noqa: F401
        _toolreel_recording_marker,
        pytest_runtest_makereport,
        toolreel_recording,
    )

__all__ = [
    "Call",
    "FunctionModel",
    "MakeScriptedModel",
    "ModelInfo",
    "NetworkBlocked",
    "OpenRecording",
    "Override",
    "Reel",
    "Reply",
    "ScriptedModel",
    "ScriptedServer",
    "TestModel",
    "ToolCalls",
    "calculator",
    "call",
    "cut_off",
    "http_error",
    "override",
    "overriding",
    "text",
    "tool_calls",
]
