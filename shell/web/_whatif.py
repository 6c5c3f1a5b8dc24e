"""What if, over HTTP: fork a session of the app's journal at a round, and diff two sessions.

`POST /api/sessions/{id}/fork` takes `{at_round | at_turn, results?: {call_id:
text}, prompt?, system?, into?}` (what `toolreel fork` takes) and writes the fork
with `fork(...)` over the app's journal and options; it answers 201 `{id, from,
continues}` and runs nothing. `continues` says the fork point owes a model call:
the page then streams it with `POST /api/sessions/{id}/continue` (the forked turn
going on live), so the fork's refusals (400, 404, 409) are plain JSON before any
stream begins, and a fork left there (the page closed) is carried on later, or
by the next prompt, as any turn a crash interrupted.

`GET /api/sessions/{a}/diff/{b}` is `diff_sessions(a, b, journal=...).data()`.
"""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from toolreel.adapters import Journal, ModelPort, SessionError, SessionNotFound, diff_sessions
from toolreel.core import UsageError
from toolreel.core.record import Value
from toolreel.shell import AgentOptions, Edit, fork
from toolreel.shell.errors import ReplayDiverged

from ._sessions import origin_json, session_summary

#: The fields a fork request may hold.
FORK_FIELDS = frozenset({"at_round", "at_turn", "results", "prompt", "system", "into"})


class SessionConflict(SessionError):
    """A request the session's state refuses (409): a fork into an id taken, of a session
    that does not replay, a continue of a session that owes no turn."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ForkRequest(Value):
    """A fork as the page asks for it: the fork point, the edit, the new id (None: made up)."""

    at_round: int | None
    at_turn: int | None
    edit: Edit
    into: str | None

    @classmethod
    def of(cls, data: dict[str, Any]) -> ForkRequest:
        """The request a JSON body holds (`UsageError` naming what is wrong)."""
        unknown = sorted(set(data) - FORK_FIELDS)
        if unknown:
            raise UsageError(f"a fork takes {sorted(FORK_FIELDS)}, not {unknown}")
        results = data.get("results") or {}
        if not isinstance(results, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in results.items()
        ):
            raise UsageError("'results' must map call ids to result texts (strings)")
        for field in ("prompt", "system", "into"):
            if data.get(field) is not None and not isinstance(data[field], str):
                raise UsageError(f"'{field}' must be a string")
        return cls(
            at_round=_position(data, "at_round"),
            at_turn=_position(data, "at_turn"),
            edit=Edit(results=results, prompt=data.get("prompt"), system=data.get("system")),
            into=data.get("into") or None,
        )


def _position(data: dict[str, Any], field: str) -> int | None:
    """A 1-based turn or round number of the body, or None."""
    value = data.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"'{field}' must be a whole number from 1")
    return value


def new_fork_id(session_id: str) -> str:
    """An id for a fork of `session_id` no session has (its start, then a random tail)."""
    return f"{session_id[:60]}~fork-{uuid.uuid4().hex[:8]}"


async def fork_session(
    journal: Journal,
    options: AgentOptions,
    model: ModelPort | None,
    session_id: str,
    asked: ForkRequest,
) -> dict[str, Any]:
    """Write the fork `asked` of `session_id` into `journal`: the JSON the route answers.

    The Client `fork` returns is not opened here (the continue route opens the
    session); the model port it needs is opened for the fork alone and closed.
    """
    into = asked.into or new_fork_id(session_id)
    sessions = journal.sessions()
    if session_id not in sessions:
        raise _not_found(session_id)
    if into in sessions:
        raise SessionConflict(f"session {into!r} already exists: fork into another id")
    if journal.config(session_id).structured:
        raise UsageError(f"session {session_id!r} is an agent run: only chat sessions fork")
    port = model or options.connection.open_model()
    try:
        fork(
            journal,
            session_id,
            at_turn=asked.at_turn,
            at_round=asked.at_round,
            edit=asked.edit,
            into=into,
            options=options,
            model=port,
        )
    except ReplayDiverged as exc:
        raise SessionConflict(
            f"session {session_id!r} does not replay up to the fork: {exc}"
        ) from exc
    finally:
        if model is None:
            await port.aclose()
    summary = session_summary(journal, into)
    return {"id": into, "from": summary["from"], "continues": summary["outcome"] == "unfinished"}


def owes_a_turn(journal: Journal, session_id: str) -> None:
    """Nothing, if the session's last turn is unfinished (a fork's, a crash's); else why not."""
    if session_id not in journal.sessions():
        raise _not_found(session_id)
    outcome = session_summary(journal, session_id)["outcome"]
    if outcome != "unfinished":
        raise SessionConflict(
            f"session {session_id!r} has no turn to continue (its last turn: {outcome}); "
            "send a prompt instead"
        )


def diff_data(journal: Journal, a: str, b: str) -> dict[str, Any]:
    """Two sessions of the journal compared, as JSON (`SessionNotFound` for an unknown one)."""
    sessions = journal.sessions()
    for session_id in (a, b):
        if session_id not in sessions:
            raise _not_found(session_id)
    data = diff_sessions(a, b, journal=journal).data()
    data["from"] = [origin_json(journal.origin(a)), origin_json(journal.origin(b))]
    return data


def _not_found(session_id: str) -> SessionNotFound:
    """The error for a session the app's journal does not hold (404)."""
    return SessionNotFound(session_id, "the app's journal")
