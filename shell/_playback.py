"""One pass through a recording: what it serves the model port, the tools and the caller.

A `Recording` (shell/_recording.py) holds what a session recorded; a
`Playback` hands it out in order — the model calls, the tool outputs, a manual
caller's results, a person's approvals — remembering what it already handed
out. Every rerun takes a new one, so a recording reruns from its beginning each
time, and two reruns at once do not share their progress.

A model request is matched by its journal form (`request_form`, digest
included); one that differs is told as the difference from the recorded
request as a whole, rebuilt by folding the journal (`rebuilt_requests`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, NoReturn

import attrs
from returns.result import Failure, Result, Success

from toolreel.adapters import Journal, RequestDiff, SessionError, diff_requests
from toolreel.adapters.replay import fold_journal, request_form
from toolreel.core import (
    Approved,
    CallModel,
    Denied,
    ModelEvent,
    ModelRequest,
    StepError,
    ToolCall,
    ToolFinished,
)
from toolreel.core.record import Value

from ._errors import ReplayError
from ._images import ToolOutput
from ._tools import Tool, as_tool

#: A tool call as the recording files its answers: its name and its arguments (JSON text).
CallKey = tuple[str, str]

#: How a mismatch names the two sides.
LABELS = ("recorded", "asked")


class RequestMismatch(ReplayError):
    """The program asked the model something the recording did not.

    `request_diff` is the structured difference (a `RequestDiff`: which
    message, tool or setting changed, and how) when a recorded request was
    asked differently; None when the program made a call or tool call the
    recording does not hold at all.
    """

    def __init__(self, message: str, request_diff: RequestDiff | None = None) -> None:
        """The message, and the difference it shows (if any)."""
        super().__init__(message)
        self.request_diff = request_diff


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RecordedCall(Value):
    """One recorded model call: its request (journal form) and the events it streamed.

    `full` is the whole request, rebuilt by folding the journal (its digest
    checked against `request`), or None when the fold cannot rebuild it.
    """

    request: dict[str, Any]
    events: tuple[ModelEvent, ...]
    full: ModelRequest | None = None


class Playback:
    """A recording's model calls, tool outputs, caller's results and decisions, served once
    each and in order, from the beginning."""

    def __init__(
        self,
        calls: Sequence[RecordedCall],
        model_name: str,
        outputs: Mapping[CallKey, Sequence[ToolFinished]],
        decisions: Mapping[CallKey, Sequence[Approved | Denied]],
    ) -> None:
        """Start at the recording's beginning: nothing served yet."""
        self.calls = calls
        #: The model the session asked for: a rerun whose options name none asks for it too.
        self.model_name = model_name
        self._served = 0
        self._outputs = {key: deque(told) for key, told in outputs.items()}
        self._decisions = {key: deque(decided) for key, decided in decisions.items()}

    async def aclose(self) -> None:
        """Nothing to release: a recording holds no connection."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Serve the next recorded call's events, if the request matches the recorded one."""
        asked = _matched(request_form(request))
        if self._served >= len(self.calls):
            mismatch(_unrecorded(self._served + 1, len(self.calls), request))
        recorded = self.calls[self._served]
        if asked != _matched(recorded.request):  # the digest check: the journal keeps no more
            diff = diff_requests(recorded.full or recorded.request, request, labels=LABELS)
            mismatch(f"model call {self._served + 1} differs from the recording:\n{diff}", diff)
        self._served += 1
        for event in recorded.events:
            yield event

    def output(self, name: str, arguments: str) -> ToolFinished:
        """The recorded outcome (output, error or not, images) of the next call of `name`
        with these arguments."""
        queue = self._outputs.get((name, arguments))
        if not queue:
            mismatch(f"tool call {name}({arguments}) was never recorded")
        return queue.popleft()

    def result(self, call: ToolCall) -> ToolFinished:
        """Manual mode: the result the recorded session's caller gave `call`."""
        queue = self._outputs.get((call.name, call.arguments))
        if not queue:
            mismatch(
                f"tool call {call.name}({call.arguments}) was never answered in the recording "
                "(manual mode: its caller gave no result)"
            )
        return queue.popleft()

    def decision(self, call: ToolCall) -> Approved | Denied:
        """The recorded person's decision on the held `call`, addressed to its id."""
        queue = self._decisions.get((call.name, call.arguments))
        if not queue:
            mismatch(
                f"approval of tool call {call.name}({call.arguments}) was never decided in "
                "the recording (it ended paused for approval)"
            )
        return attrs.evolve(queue.popleft(), call_id=call.id)

    def tools(self, tools: Sequence[Tool | Callable[..., Any]]) -> list[Tool]:
        """The given tools (same specs) answering with the recorded outputs instead of running."""
        return [RecordedTool.of(as_tool(item), self) for item in tools]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class RecordedTool(Tool):
    """A tool whose calls return what the recording says they returned (errors included)."""

    playback: Playback

    @classmethod
    def of(cls, tool: Tool, playback: Playback) -> RecordedTool:
        """`tool`'s spec and settings, with the playback as its outcome."""
        fields = {a.name: getattr(tool, a.name) for a in attrs.fields(Tool) if a.init}
        return cls(playback=playback, **fields)

    async def run(self, arguments_json: str) -> Result[str | ToolOutput, str]:
        """The recorded outcome of this call (with the images it returned, if any)."""
        told = self.playback.output(self.name, arguments_json)
        if told.is_error:
            return Failure(told.output)
        output: str | ToolOutput = told.output
        if told.images:
            output = ToolOutput(text=told.output, images=told.images)
        return Success(output)


def mismatch(message: str, diff: RequestDiff | None = None) -> NoReturn:
    """Stop the run: the driver raises a `ReplayError` from the port to the caller as is."""
    raise RequestMismatch(message, diff)


def _unrecorded(number: int, held: int, request: ModelRequest) -> str:
    """A model call past the recording's end: how many were recorded, and what it asked."""
    last = request.messages[-1] if request.messages else None
    asked = f"{last.role}: {last.content or '(tool rounds)'}" if last else "(no messages)"
    return (
        f"model call {number} was never recorded (the recording holds {held}); "
        f"its last message is {asked}"
    )


def rebuilt_requests(journal: Journal, session_id: str) -> list[ModelRequest | None]:
    """Every recorded `CallModel`'s whole request, in order, rebuilt by folding the journal.

    A request whose rebuilt form does not match the recorded one (digest
    included) is None, and so is every one after a step the reducer refuses.
    """
    found: list[ModelRequest | None] = []
    try:
        for entry, effects in fold_journal(journal, session_id):
            made = [e.request for e in effects if isinstance(e, CallModel)]
            kept = [e for e in entry.effects if e["type"] == "CallModel"]
            for index, form in enumerate(kept):
                request = made[index] if index < len(made) else None
                same = request is not None and request_form(request) == form["request"]
                found.append(request if same else None)
    except (StepError, SessionError):
        pass  # the rest stay unknown: mismatches show the digest alone
    return found


def _matched(form: dict[str, Any]) -> dict[str, Any]:
    """What of a request's journal form a rerun must ask again: all but the prompt-cache key.

    The key is the session's id (core `LoopConfig.cache_key`), and a rerun is a new session.
    """
    if "cache_key" not in form:
        return form
    return {name: value for name, value in form.items() if name != "cache_key"}
