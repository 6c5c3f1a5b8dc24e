"""Record modes: a marked test records its model calls once and replays them ever after.

    @pytest.mark.toolreel_recording("weather")
    def test_weather(toolreel_recording):
        reel = toolreel_recording
        async with Client(reel.options(tools=[forecast]), model=reel.model) as client: ...

The recording is `recordings/weather.jsonl` beside the test file (the ini
option `toolreel_recordings_dir` moves them all, relative to the ini file):
one session exported as `toolreel export` writes it, readable and diffable.
`--toolreel-record` decides, as VCR.py's record modes do, what a test does:

- `once` (default; `none` when the `CI` variable is set): replay the recording
  if there is one (a request it does not hold fails the test), else record it.
- `new` (also `new_episodes`): replay while the requests match the
  recording; from the first one that differs (or the first past its end), ask
  the real provider; a session that differs (fewer calls too) is written over
  the recording whole — a session is one line of calls, not a set of episodes.
- `all`: always ask the real provider and write the recording.
- `none`: only replay; a missing recording fails with the command making it.

Recording asks the provider the options name (`TOOLREEL_PROVIDER`,
`TOOLREEL_MODEL`, `TOOLREEL_BASE_URL` as the CLI reads them, unless the test
passes its own), with the key from the provider's variable (`OPENAI_API_KEY`,
...); keys never reach the file (the session's redactor masks them as `***`).
Only the model is replayed: the tools run as they do in the test. A recording
is written only when the test passes. A marked test gets its reel even
without naming the fixture, and where `toolreel.testing.override` exists the
reel's model is entered as the override, so a Client made without `model=`
replays too (recording still needs the reel's options: their journal).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest

from toolreel.adapters import ModelPort, effect_record
from toolreel.adapters._providers import environment_keys, http_model
from toolreel.adapters._redact import Redactor
from toolreel.core import (
    CallModel,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolreelError,
)
from toolreel.shell import AgentOptions, Recording, RequestMismatch, export_session
from toolreel.shell._journal_files import open_path

Mode = Literal["once", "new", "all", "none"]
MODES: tuple[Mode, ...] = ("once", "new", "all", "none")
OPTION = "--toolreel-record"
INI_DIR = "toolreel_recordings_dir"
MARKER = "toolreel_recording"
#: The options' fields a recording test takes from the environment, as the CLI does.
CLI_VARIABLES = {
    "provider": "TOOLREEL_PROVIDER",
    "model": "TOOLREEL_MODEL",
    "base_url": "TOOLREEL_BASE_URL",
}
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


def _request_form(request: ModelRequest) -> dict[str, Any]:
    """A request as a recording holds it (messages digested)."""
    form: dict[str, Any] = effect_record(CallModel(request=request, iteration=0))["request"]
    return form


class Reel:
    """What a `toolreel_recording` test runs its app with: `.options(...)` and `.model`."""

    def __init__(
        self, path: Path, mode: Mode, command: str, journal: Path, recording: Recording | None
    ) -> None:
        """Replay `recording` (None: record) under `mode`; the session goes to `journal`."""
        #: The recording's file.
        self.path = path
        #: The record mode in force.
        self.mode: Mode = mode
        #: The (temporary) journal every session of the test is recorded in.
        self.journal = journal
        #: The recording replayed (None when recording afresh).
        self.recording = recording
        #: The model port to pass as `model=`: the recording, or (recording) the provider.
        self.model = ReelModel(self, command)
        self._options: AgentOptions | None = None

    def options(self, **fields: Any) -> AgentOptions:
        """AgentOptions for the test's Client/run/execute_agent (fields as in `AgentOptions`)."""
        return self.apply(AgentOptions(**self._defaults(fields)))

    def apply(self, options: AgentOptions) -> AgentOptions:
        """`options` (the app's own, as they are) journaled into this reel.

        A replay (modes once and none) retries without waiting.
        """
        options = attrs.evolve(options, journal=str(self.journal))
        if self.recording is not None and self.mode != "new":
            retry = attrs.evolve(options.retry, base_delay=0.0, max_delay=0.0, max_retry_after=0.0)
            options = attrs.evolve(options, retry=retry)
        self._options = options
        return options

    def _defaults(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The connection fields the test left out: the CLI's variables; a replay's recorded model.

        (Mode `new` keeps the variables' model: a changed model is a changed request.)
        """
        recording = self.recording
        if recording is not None and self.mode != "new" and recording.calls:
            fields.setdefault("model", recording.calls[0].request.get("model", ""))
        for name, variable in CLI_VARIABLES.items():
            value = os.environ.get(variable)
            if value and name not in fields:
                fields[name] = value
        return fields

    def open_provider(self) -> ModelPort:
        """The real provider's model port, as the options (else the environment) name it.

        Opened directly, not by `Connection.open_model()`: under `override`
        that would be this reel's own model again.
        """
        connection = (self._options or self.options()).connection
        return http_model(
            connection.provider,
            base_url=connection.base_url,
            key=connection.api_key,
            stream=connection.stream,
            timeouts=connection.timeouts(),
            client=connection.http_client,
            tool_call_recovery=connection.tool_call_recovery,
        )


class ReelModel:
    """A model port that replays the reel's recording, and asks the provider when recording."""

    def __init__(self, reel: Reel, command: str) -> None:
        """Serve `reel`; `command` is how to re-record, for a mismatch's message."""
        self.reel = reel
        self.command = command
        #: How many calls the program made, and how many the recording answered.
        self.asked = 0
        self.served = 0
        #: Whether the program asked what the recording does not hold (mode `new`).
        self.diverged = False
        #: Keys a session over this port must never store: every provider's, from the environment.
        self.redactor: Redactor = environment_keys()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The recorded events while they match (as the mode says), else the provider's."""
        self.asked += 1
        recording = self.reel.recording
        if recording is not None and self.reel.mode != "new":
            async for event in self._replay(recording, request):
                yield event
            return
        if recording is not None and not self.diverged:
            calls = recording.calls
            index = self.served
            if index < len(calls) and _request_form(request) == calls[index].request:
                self.served += 1
                for event in calls[index].events:
                    yield event
                return
            self.diverged = True
        provider = self.reel.open_provider()
        try:
            async for event in _coalesced(provider.stream(request)):
                yield event
        finally:
            await provider.aclose()

    async def _replay(
        self, recording: Recording, request: ModelRequest
    ) -> AsyncIterator[ModelEvent]:
        """The recording's answer; a request it does not hold fails, saying how to re-record."""
        try:
            async for event in recording.stream(request):
                yield event
        except RequestMismatch as exc:
            hint = f"\nre-record it if the change is intended: {self.command}"
            raise RequestMismatch(f"{exc}{hint}") from exc
        self.served += 1

    async def aclose(self) -> None:
        """Nothing to release: each call to the provider opens and closes its own port."""

    @property
    def rewrite(self) -> bool:
        """Whether a replay in mode `new` differs from the recording: write it again."""
        recording = self.reel.recording
        if recording is None or self.reel.mode != "new":
            return False
        return self.diverged or self.served != len(recording.calls)


async def _coalesced(events: AsyncIterator[ModelEvent]) -> AsyncIterator[ModelEvent]:
    """The events with each run of text (or of one call's arguments) joined into one.

    Keys are masked event by event: one the provider echoes across several
    deltas would reach the session's final text unmasked. Joined, it is
    masked — and a recording holds one delta per text, easier to read.
    """
    held: TextDelta | ToolCallArgumentsDelta | None = None
    async for event in events:
        if isinstance(held, TextDelta) and isinstance(event, TextDelta):
            held = TextDelta(text=held.text + event.text)
            continue
        if (
            isinstance(held, ToolCallArgumentsDelta)
            and isinstance(event, ToolCallArgumentsDelta)
            and event.index == held.index
        ):
            held = attrs.evolve(held, fragment=held.fragment + event.fragment)
            continue
        if held is not None:
            yield held
            held = None
        if isinstance(event, TextDelta | ToolCallArgumentsDelta):
            held = event
        else:
            yield event
    if held is not None:
        yield held


def _command(request: pytest.FixtureRequest, mode: Mode) -> str:
    """The command that (re-)records this test."""
    return f"pytest {request.node.nodeid} {OPTION}={mode}"


def _load(path: Path, request: pytest.FixtureRequest) -> Recording:
    """The recording at `path`; a damaged one fails the test, saying how to make it again."""
    try:
        return Recording.from_file(path)
    except ToolreelError as exc:
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
    if mode == "all":
        return Reel(path, mode, _command(request, "new"), journal, None)
    if not path.is_file():
        if mode == "none":
            pytest.fail(
                f"toolreel recording {path} is missing (record mode none, "
                f"the default when CI is set); make it with: {_command(request, 'once')}",
                pytrace=False,
            )
        return Reel(path, mode, _command(request, "new"), journal, None)
    return Reel(path, mode, _command(request, "new"), journal, _load(path, request))


def save(reel: Reel) -> bool:
    """Write the test's session over the recording, if it was recorded (or changed)."""
    if reel.recording is not None:
        _check_replayed(reel)
        if not reel.model.rewrite:
            return False
    if not reel.journal.is_file():
        pytest.fail(
            f"toolreel recording {reel.path}: the test ran no session with the reel's options "
            "(pass toolreel_recording.options() or .apply(options) to Client/run/execute_agent)",
            pytrace=False,
        )
    journal = open_path(reel.journal, jsonl=True)
    try:
        sessions = journal.sessions()
        if len(sessions) != 1:
            pytest.fail(
                f"toolreel recording {reel.path}: a recording holds one session; "
                f"the test ran {len(sessions)}",
                pytrace=False,
            )
        reel.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = reel.path.with_name(reel.path.name[: -len(".jsonl")] + ".recording.jsonl")
        fresh.unlink(missing_ok=True)
        export_session(journal, sessions[0], fresh)
    finally:
        journal.close()
    fresh.replace(reel.path)
    return True


def _check_replayed(reel: Reel) -> None:
    """A replayed test whose session never asked the reel's model went elsewhere: say so."""
    if reel.model.asked == 0 and reel.journal.is_file():
        pytest.fail(
            f"toolreel recording {reel.path}: the test's session did not ask the reel's model, "
            "so nothing was replayed (and a provider may have been asked): pass "
            "model=toolreel_recording.model to Client/run/execute_agent",
            pytrace=False,
        )


def _enter_override(stack: ExitStack, model: ModelPort) -> None:
    """Make every Client/agent of the test use `model`, where `toolreel.testing.override` exists."""
    from toolreel import testing  # noqa: PLC0415 - the package, complete by now

    override = getattr(testing, "override", None)
    if override is not None:
        stack.enter_context(override(model=model))


@pytest.fixture
def toolreel_recording(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Reel]:
    """The marked test's `Reel`: pass `.options(...)` and `.model` to Client/run/execute_agent."""
    reel = open_reel(request, tmp_path_factory.mktemp("toolreel-recording"))
    with ExitStack() as stack:
        _enter_override(stack, reel.model)
        yield reel
    if request.node.stash.get(PASSED, False):
        save(reel)


@pytest.fixture(autouse=True)
def _toolreel_recording_marker(request: pytest.FixtureRequest) -> None:
    """A marked test gets its reel even when it does not ask for it (see `override`)."""
    if request.node.get_closest_marker(MARKER) is not None:
        request.getfixturevalue("toolreel_recording")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """Note whether the test's call passed: only a passing test writes its recording."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[PASSED] = report.passed
