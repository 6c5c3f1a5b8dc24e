"""toolreel.testing: a pytest plugin for testing your own agents (loaded automatically).

Fixtures:
- `scripted_model`: `scripted_model([text("hi"), tool_calls(...), http_error(429, ...)])`
  gives a model that says exactly that, one reply per call — served over real
  HTTP on 127.0.0.1 through the OpenAI-compatible adapter (default), or
  in-process with `http=False`. Use `scripted.options(...)` for the options
  and pass `model=scripted.model` to `Client`/`run`.
- `recorded_session`: `recorded_session("tests/recordings/calc.jsonl")` gives a
  `Recording` that replays a recorded session offline (`await rec.rerun(options)`;
  an agent run's: `await rec.rerun(options, agent=definition)`).
- `transcript_snapshot`: syrupy's `snapshot` storing a session's transcript (a
  `Session` or an `AgentSession`); `.hide("usage", "ids", "timings", "retries")`
  leaves volatile parts out; a failure shows the transcripts' unified diff first.
- `toolreel_recording`: for a test marked `@pytest.mark.toolreel_recording("name")`,
  a `Reel` replaying recordings/name.jsonl, or recording it from the real
  provider (`--toolreel-record=once|new|all|none`; see _record_modes.py).
- `toolreel_override`: every Client, `run` and `execute_agent` of the test uses a
  `TestModel()` (or the model given by indirect parametrization; swap it with
  `toolreel_override.use(model)`), as under `override(model=...)`.
- Network guard: `@pytest.mark.toolreel_offline`, or `pytest --toolreel-offline`
  for every test, makes any HTTP call to a host other than 127.0.0.1/localhost
  fail loudly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import pytest

from toolreel.adapters import FunctionModel as EventModel
from toolreel.adapters import ModelPort
from toolreel.core import ModelRequest
from toolreel.shell import AgentOptions, Recording
from toolreel.shell._scripted import (
    Reply,
    ScriptedServer,
    cut_off,
    http_error,
    reply_events,
    text,
    tool_calls,
)
from toolreel.shell._scripted._models import (
    Call,
    FunctionModel,
    ModelInfo,
    TestModel,
    ToolCalls,
    call,
)

from . import _record_modes
from ._guard import NetworkBlocked, guard_network
from ._override import Override, override, overriding
from ._record_modes import (  # noqa: F401 - the plugin's fixtures and hook
    Reel,
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
    "TestModel",
    "ToolCalls",
    "call",
    "cut_off",
    "http_error",
    "override",
    "overriding",
    "text",
    "tool_calls",
]


class ScriptedModel:
    """A model that answers with the scripted replies, one per call."""

    def __init__(self, replies: Sequence[Reply], *, http: bool = True) -> None:
        """Serve `replies` over HTTP on 127.0.0.1, or in-process."""
        self.replies = list(replies)
        self.server = ScriptedServer(self.replies).__enter__() if http else None
        self.calls: list[ModelRequest] = []
        self.model: ModelPort | None = None if http else EventModel(self._answer)

    def _answer(self, request: ModelRequest) -> list[Any]:
        """The next reply's events (an HTTP 500 when the script has run out)."""
        self.calls.append(request)
        index = len(self.calls) - 1
        if index >= len(self.replies):
            return reply_events(http_error(500, f"no scripted reply for call {index + 1}"))
        return reply_events(self.replies[index])

    @property
    def requests(self) -> list[Any]:
        """What the program sent: HTTP bodies (http) or neutral requests (in-process)."""
        return list(self.server.requests) if self.server else list(self.calls)

    def options(self, **overrides: Any) -> AgentOptions:
        """AgentOptions pointed at this model (fields as in `AgentOptions`)."""
        overrides.setdefault("model", "scripted")
        if self.server is not None:
            overrides.setdefault("base_url", self.server.url)
            overrides.setdefault("api_key", "scripted")
        return AgentOptions(**overrides)

    def close(self) -> None:
        """Stop the server, if any."""
        if self.server is not None:
            self.server.__exit__(None, None, None)


class MakeScriptedModel(Protocol):
    """The `scripted_model` fixture, for annotating a test: `scripted_model: MakeScriptedModel`."""

    def __call__(self, replies: Sequence[Reply], *, http: bool = True) -> ScriptedModel:
        """A model answering with `replies`, over HTTP on 127.0.0.1 or in-process."""
        ...


class OpenRecording(Protocol):
    """The `recorded_session` fixture, for annotating a test."""

    def __call__(self, path: str | Path, session_id: str | None = None) -> Recording:
        """The recording of `session_id` (or the file's only session) in `path`."""
        ...


@pytest.fixture
def scripted_model() -> Iterator[MakeScriptedModel]:
    """Make scripted models for a test; their servers stop when it ends."""
    made: list[ScriptedModel] = []

    def make(replies: Sequence[Reply], *, http: bool = True) -> ScriptedModel:
        model = ScriptedModel(replies, http=http)
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()


@pytest.fixture
def recorded_session() -> OpenRecording:
    """Open a recorded session file (an exported session, or any JSON-lines journal)."""

    def open_recording(path: str | Path, session_id: str | None = None) -> Recording:
        return Recording.from_file(path, session_id)

    return open_recording


@pytest.fixture
def toolreel_override(request: pytest.FixtureRequest) -> Iterator[Override]:
    """Every model the test's code opens is a TestModel (or `request.param`, or what `use` sets)."""
    with override(model=getattr(request, "param", None) or TestModel()) as active:
        yield active


@pytest.fixture
def transcript_snapshot(snapshot: Any) -> Any:
    """syrupy's snapshot, storing sessions (chat sessions and agent runs) as their transcript.

    `transcript_snapshot.hide("usage", "ids")` leaves volatile parts out.
    """
    from ._snapshot import TranscriptSnapshot  # noqa: PLC0415 - syrupy is optional

    return TranscriptSnapshot.of(snapshot)


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--toolreel-offline`: no test may reach a real provider."""
    parser.addoption(
        "--toolreel-offline",
        action="store_true",
        help="fail any HTTP call to a host other than 127.0.0.1/localhost (toolreel)",
    )
    _record_modes.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker."""
    config.addinivalue_line(
        "markers", "toolreel_offline: fail any HTTP call to a non-local host (toolreel)"
    )
    _record_modes.configure(config)


@pytest.fixture(autouse=True)
def _toolreel_network_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """Guard the network for marked tests, or all tests with --toolreel-offline."""
    wanted = request.node.get_closest_marker("toolreel_offline") is not None
    if not (wanted or request.config.getoption("--toolreel-offline", default=False)):
        yield
        return
    with guard_network() as blocked:
        yield
    if blocked:
        pytest.fail(f"real provider call(s) during the test: {', '.join(blocked)}")
