"""The pytest plugin's fixtures and hooks (toolreel.testing imports them when pytest is there).

See the package docstring for what each fixture gives; the record modes' are in
_record_modes.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from toolreel.shell import Recording
from toolreel.shell.scripted import Reply, TestModel

from . import _record_modes
from ._guard import guard_network
from ._override import Override, override
from ._scripted_model import MakeScriptedModel, OpenRecording, ScriptedModel


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
