"""`ScriptedModel`: what the `scripted_model` fixture makes — replies played one per call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from toolreel.adapters import EventModel, ModelPort
from toolreel.core import ModelRequest
from toolreel.shell import AgentOptions, Recording
from toolreel.shell.scripted import Reply, ScriptedServer, http_error, reply_events


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
