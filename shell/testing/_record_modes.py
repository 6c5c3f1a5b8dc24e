"""Record modes: a marked test records its model calls once and replays them ever after.

    @pytest.mark.toolreel_recording("weather")
    def test_weather():
        result = anyio.run(my_app.ask, "Weather in Paris?")   # the app's own Client and options
        assert "sunny" in result

The recording is `recordings/weather.jsonl` beside the test file (the ini
option `toolreel_recordings_dir` moves them all, relative to the ini file):
every model call the test's code made, one JSON line each (`_tape.py`).
While a marked test runs, every connection its code opens — a `Client`,
`run` or `execute_agent` without `model=` — goes through the test's reel
(`_reel.py`), with the connection's own provider, URL, model and key when the
provider must be asked. `--toolreel-record` decides, as VCR.py's record modes
do, what a test does:

- `once` (default; `none` when the `CI` variable is set): replay the recording
  if there is one (a request it does not hold fails the test, with the
  difference and the command re-recording it), else record it.
- `new` (also `new_episodes`): replay the requests the recording holds; ask
  the provider the others; if anything changed (a request asked afresh, or a
  recorded one not asked), write what the test asked over the recording whole.
- `all`: always ask the provider and write the recording.
- `none`: only replay; a missing recording fails with the command making it,
  and a request the recording does not hold fails — the provider is never asked.

Keys never reach the file: the key of each connection, and every provider's
key in the environment, are masked as `***`. Only the model is replayed: the
tools run as they do in the test. A recording is written only when the test
passes. The `toolreel_recording` fixture gives the test its `Reel`:
`reel.options(...)` (the connection from `TOOLREEL_PROVIDER`,
`TOOLREEL_MODEL`, `TOOLREEL_BASE_URL` as the CLI reads them, unless given)
and `reel.model` for code that takes a `model=`.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolreel.core import ToolreelError
from toolreel.shell.engine import MODEL_OPENER

from ._reel import MODES, Mode, Reel
from ._tape import TapeCall, read_tape, write_tape

OPTION = "--toolreel-record"
INI_DIR = "toolreel_recordings_dir"
MARKER = "toolreel_recording"
#: Whether a test's call phase passed (set by `pytest_runtest_makereport`).
PASSED = pytest.StashKey[bool]()


def add_options(parser: pytest.Parser) -> None:
    """`--toolreel-record=once|new|all|none` and the ini option for the recordings' folder."""
    parser.addoption(
        OPTION,
        choices=(*MODES, "new_episodes"),
        default=None,
        help="record modes of @pytest.mark.toolreel_recording tests: once (default; "
        "none when CI is set), new, all, none (toolreel)",
    )
    parser.addini(
        INI_DIR,
        "folder of toolreel recordings, relative to the ini file (default: "
        "recordings/ beside each test file)",
        default="",
    )


def configure(config: pytest.Config) -> None:
    """Register the marker."""
    config.addinivalue_line(
        "markers",
        f"{MARKER}(name): replay recordings/<name>.jsonl, or record it (--toolreel-record)",
    )


def record_mode(config: pytest.Config) -> Mode:
    """The mode asked for: the option, else `none` on CI (`CI` set), else `once`."""
    asked: str | None = config.getoption(OPTION, default=None)
    if asked == "new_episodes":  # VCR.py's name
        return "new"
    if asked in MODES:
        return asked
    on_ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    return "none" if on_ci else "once"


def recording_path(request: pytest.FixtureRequest) -> Path:
    """Where the marked test's recording lives."""
    marker = request.node.get_closest_marker(MARKER)
    name = str(marker.args[0]) if marker and marker.args else request.node.name
    name = "".join(c if c.isalnum() or c in "-_./" else "_" for c in name)
    if not name.endswith(".jsonl"):
        name += ".jsonl"
    folder = str(request.config.getini(INI_DIR) or "")
    if folder:
        config = request.config
        base = config.inipath.parent if config.inipath else config.rootpath
        return base / folder / name
    return request.path.parent / "recordings" / name


def _command(request: pytest.FixtureRequest, mode: Mode) -> str:
    """The command that (re-)records this test."""
    return f"pytest {request.node.nodeid} {OPTION}={mode}"


def _load(path: Path, request: pytest.FixtureRequest) -> list[TapeCall]:
    """The recording at `path`; a damaged one fails the test, saying how to make it again."""
    try:
        return read_tape(path)
    except (ToolreelError, OSError, UnicodeDecodeError) as exc:
        problem = str(exc)
    pytest.fail(
        f"toolreel recording {path} cannot be read: {problem}\n"
        f"re-record it: {_command(request, 'all')}",
        pytrace=False,
    )


def open_reel(request: pytest.FixtureRequest, scratch: Path) -> Reel:
    """The marked test's reel: replaying its recording, or recording as the mode says."""
    path = recording_path(request)
    mode = record_mode(request.config)
    journal = scratch / "session.jsonl"
    command = _command(request, "new")
    if mode == "all":
        return Reel(path, mode, command, journal, None)
    if not path.is_file():
        if mode == "none":
            pytest.fail(
                f"toolreel recording {path} is missing (record mode none, "
                f"the default when CI is set); make it with: {_command(request, 'once')}",
                pytrace=False,
            )
        return Reel(path, mode, command, journal, None)
    return Reel(path, mode, command, journal, _load(path, request))


def save(reel: Reel) -> bool:
    """Write what the test asked over the recording, if the mode says so; whether it did."""
    if reel.recording is not None:
        _check_replayed(reel)
    if not reel.rewrite:
        return False
    if not reel.calls:
        pytest.fail(
            f"toolreel recording {reel.path}: the test asked no model through the reel, so "
            "there is nothing to record (a model passed as model= is used as it is: leave it "
            "out, or pass toolreel_recording.model)",
            pytrace=False,
        )
    write_tape(reel.path, reel.calls, reel.redactor)
    return True


def _check_replayed(reel: Reel) -> None:
    """A replayed test that asked the reel nothing went elsewhere: say so."""
    if reel.asked == 0 and reel.recording:
        pytest.fail(
            f"toolreel recording {reel.path}: the test asked no model through the reel, so "
            "nothing was replayed (and a provider may have been asked): a model passed as "
            "model= is used as it is (leave it out, or pass toolreel_recording.model)",
            pytrace=False,
        )


@pytest.fixture
def toolreel_recording(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Reel]:
    """The marked test's `Reel`; every connection the test opens meanwhile goes through it."""
    reel = open_reel(request, tmp_path_factory.mktemp("toolreel-recording"))
    token = MODEL_OPENER.set(reel.open_for)
    try:
        yield reel
    finally:
        MODEL_OPENER.reset(token)
    if request.node.stash.get(PASSED, False):
        save(reel)


@pytest.fixture(autouse=True)
def _toolreel_recording_marker(request: pytest.FixtureRequest) -> None:
    """A marked test gets its reel even when it does not ask for it."""
    if request.node.get_closest_marker(MARKER) is not None:
        request.getfixturevalue("toolreel_recording")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[Any]
) -> Generator[None, Any, None]:
    """Note whether the test's call passed: only a passing test writes its recording."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[PASSED] = report.passed
