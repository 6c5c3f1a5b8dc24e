"""A marked test's reel: every model call its code makes is replayed from the recording, or
asked of the connection's own provider and recorded (shell/testing/_record_modes.py says when).

While the reel is in force, each connection the test's code opens (a `Client`,
`run`, `execute_agent` without `model=`) gets a `ReelPort` instead of its
HTTP model: the port hands every request to the reel, which serves the first
recorded call not yet served whose request is the same (so sessions may run
one after another or side by side), or asks the provider through the
connection's own port — its URL, model and key — opened for that call. The calls
made are kept, in order, for the file (`_tape.py`). `reel.options(...)` and
`reel.model` are the fixture's way (the options' connection, from the
`TOOLREEL_*` variables unless given); `reel.model` is for a `model=` argument.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import attrs

from toolreel.adapters import ModelPort, diff_requests
from toolreel.adapters.providers import environment_keys
from toolreel.adapters.redaction import Redactor
from toolreel.core import (
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
)
from toolreel.shell import AgentOptions, Connection
from toolreel.shell.errors import RequestMismatch

from ._tape import TapeCall, request_form

Mode = Literal["once", "new", "all", "none"]
MODES: tuple[Mode, ...] = ("once", "new", "all", "none")
#: The options' fields a recording test takes from the environment, as the CLI does.
CLI_VARIABLES = {
    "provider": "TOOLREEL_PROVIDER",
    "model": "TOOLREEL_MODEL",
    "base_url": "TOOLREEL_BASE_URL",
}
#: How a mismatch names the two sides.
LABELS = ("recorded", "asked")


class Reel:
    """What a marked test's model calls go through: `.options(...)`, `.model`, and the calls."""

    def __init__(
        self, path: Path, mode: Mode, command: str, journal: Path, recording: list[TapeCall] | None
    ) -> None:
        """Replay `recording` (None: record) under `mode`; `command` re-records the test."""
        #: The recording's file.
        self.path = path
        #: The record mode in force.
        self.mode: Mode = mode
        #: The journal of the sessions run with `options()` (a temporary file).
        self.journal = journal
        #: The recorded calls replayed (None when recording afresh).
        self.recording = recording
        self.command = command
        #: The calls the test made, in order (replayed or asked): what a new recording holds.
        self.calls: list[TapeCall] = []
        #: How many calls the test made, how many the recording answered, the provider answered.
        self.asked = 0
        self.served = 0
        self.fresh = 0
        #: Every secret the file must never hold: each provider's key in the environment, and
        #: the key of each connection the test opened.
        self.redactor: Redactor = environment_keys()
        #: The port to pass as `model=` (the fixture's way): the options' connection's.
        self.model = ReelModel(self)
        self._used: set[int] = set()
        self._options: AgentOptions | None = None

    def options(self, **fields: Any) -> AgentOptions:
        """AgentOptions for the test's Client/run/execute_agent (fields as in `AgentOptions`)."""
        return self.apply(AgentOptions(**self._defaults(fields)))

    def apply(self, options: AgentOptions) -> AgentOptions:
        """`options` (the app's own, as they are) journaled into `journal`.

        A replay (modes once and none) retries without waiting.
        """
        options = attrs.evolve(options, journal=str(self.journal))
        if self.recording is not None and self.mode not in ("new", "all"):
            retry = attrs.evolve(options.retry, base_delay=0.0, max_delay=0.0, max_retry_after=0.0)
            options = attrs.evolve(options, retry=retry)
        self._options = options
        return options

    def _defaults(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The connection fields the test left out: the CLI's variables; a replay's recorded model.

        (Mode `new` keeps the variables' model: a changed model is a changed request.)
        """
        recording = self.recording
        if recording and self.mode not in ("new", "all"):
            fields.setdefault("model", recording[0].request.get("model", ""))
        for name, variable in CLI_VARIABLES.items():
            value = os.environ.get(variable)
            if value and name not in fields:
                fields[name] = value
        return fields

    def open_for(self, connection: Connection, open_own: Callable[[], ModelPort]) -> ReelPort:
        """The port a connection the test opens gets (`MODEL_OPENER`): its calls come here."""
        port = ReelPort(self, connection, open_own)
        self.redactor = self.redactor | port.secrets
        return port

    @property
    def fixture_connection(self) -> Connection:
        """The connection of the options made with `options()`/`apply()` (else the defaults)."""
        return (self._options or self.options()).connection

    async def answer(self, port: ReelPort, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The recorded events of the same request, else (as the mode allows) the provider's."""
        self.asked += 1
        form = request_form(request)
        if self.recording is not None and self.mode != "all":
            index = self._match(form)
            if index is not None:
                self._used.add(index)
                self.served += 1
                recorded = self.recording[index]
                self.calls.append(attrs.evolve(recorded, connection=port.about))
                for event in recorded.events:
                    yield event
                return
            if self.mode != "new":  # once, none: the recording is all there is
                raise self._mismatch(request)
        events: list[ModelEvent] = []
        own = port.open_own()  # for this call only: nothing is left open for anyone to close
        try:
            async for event in _coalesced(own.stream(request)):
                events.append(event)
                if isinstance(event, ModelResponded | ModelCallFailed):  # kept before it is
                    self.fresh += 1  # given: the reader may stop reading at the last event
                    self.calls.append(
                        TapeCall(
                            request=form, events=tuple(events), full=request, connection=port.about
                        )
                    )
                yield event
        finally:
            with anyio.CancelScope(shield=True):
                await own.aclose()

    def _match(self, form: dict[str, Any]) -> int | None:
        """The first recorded call not yet served whose request is `form`."""
        assert self.recording is not None
        for index, call in enumerate(self.recording):
            if index not in self._used and call.request == form:
                return index
        return None

    def _mismatch(self, request: ModelRequest) -> RequestMismatch:
        """What stops a replay at a request the recording does not hold, and how to re-record."""
        assert self.recording is not None
        hint = f"\nre-record it if the change is intended: {self.command}"
        left = [call for index, call in enumerate(self.recording) if index not in self._used]
        if not left:
            last = request.messages[-1] if request.messages else None
            asked = f"{last.role}: {last.content or '(tool rounds)'}" if last else "(no messages)"
            return RequestMismatch(
                f"model call {self.asked} was never recorded (the recording holds "
                f"{len(self.recording)}, all served); its last message is {asked}{hint}"
            )
        expected = left[0]
        diff = diff_requests(expected.full or expected.request, request, labels=LABELS)
        message = f"model call {self.asked} differs from the recording:\n{diff}{hint}"
        return RequestMismatch(message, diff)

    @property
    def rewrite(self) -> bool:
        """Whether the file is written at the end (when the test passed)."""
        if self.recording is None or self.mode == "all":
            return True
        if self.mode != "new":
            return False
        return self.fresh > 0 or len(self._used) != len(self.recording)


class ReelPort:
    """The model port of one connection the test opened: every call goes through the reel."""

    def __init__(self, reel: Reel, connection: Connection, open_own: Callable[[], ModelPort]):
        """Serve `connection`'s calls from `reel`; `open_own` opens its real port, if needed."""
        self.reel = reel
        self.open_own = open_own
        #: Where its calls would go, as the file shows it (the key never).
        self.about = {
            "provider": connection.provider,
            "base_url": connection.base_url,
            "model": connection.model_name,
        }
        #: The connection's key (given, or from the provider's variable) and every provider's.
        self.secrets = connection.redactor(None) | reel.redactor

    @property
    def redactor(self) -> Redactor:
        """What a session over this port must never store (its journal masks it too)."""
        return self.secrets

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The reel's answer to `request`."""
        return self.reel.answer(self, request)

    async def aclose(self) -> None:
        """Nothing to release: each call the provider answers opens and closes its own port."""


class ReelModel:
    """`reel.model`: the port of the connection `reel.options()` describe, for `model=`."""

    def __init__(self, reel: Reel) -> None:
        """Serve the reel's options' connection (known at the first use)."""
        self.reel = reel
        self._port: ModelPort | None = None

    def port(self) -> ModelPort:
        """The connection's port: a `ReelPort` while the reel is in force (as the test runs)."""
        if self._port is None:
            self._port = self.reel.fixture_connection.open_model()
        return self._port

    @property
    def redactor(self) -> object:
        """The connection's secrets, for the session's redactor."""
        return getattr(self.port(), "redactor", None)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The reel's answer to `request`."""
        return self.port().stream(request)

    async def aclose(self) -> None:
        """Close the port it opened (a `ReelPort` holds nothing open)."""
        port, self._port = self._port, None
        if port is not None:
            await port.aclose()


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
