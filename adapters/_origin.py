"""Where a session came from: a fork of another session at a step, or a rerun of one.

A journal keeps one `SessionOrigin` per session that has one (`Journal.set_origin`,
`Journal.origin`): most sessions began with a prompt and have none. It is
metadata beside the steps, never a step: replay does not read it, so a fork or
a rerun replays like any session, and a journal written before origins existed
reads as one whose sessions have none. `load_session` puts it on the `Session`
(`toolreel sessions` and `toolreel show` say it).
"""

from __future__ import annotations

import json
from typing import Any, Literal

import attrs

from toolreel.core.record import Value

from ._errors import JournalCorrupt

#: A session forked from another at a step, or the same prompts rerun under other options.
OriginKind = Literal["fork", "rerun"]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SessionOrigin(Value):
    """Where a session came from.

    Attributes:
        kind: "fork" (the original's steps up to `seq`, then an edit and a live loop) or
            "rerun" (the original's prompts and decisions under other options).
        session_id: The original session (in the same journal).
        seq: A fork's last step shared with the original (the steps 1..seq are its own
            steps, byte for byte); None for a rerun.
        turn: The turn the fork begins in (1-based), as `toolreel show` numbers them.
        round: The round of that turn the fork begins after, if it begins after one.
        note: What was changed, in a phrase ("result of call_2 replaced", "model gpt-4o").
    """

    kind: OriginKind
    session_id: str
    seq: int | None = None
    turn: int | None = None
    round: int | None = None
    note: str = ""

    def describe(self) -> str:
        """The origin in one line: "fork of abc at step 12 (turn 1, round 2): ..."."""
        if self.kind == "rerun":
            head = f"rerun of {self.session_id}"
        else:
            where = [f"turn {self.turn}"] if self.turn is not None else []
            where += [f"round {self.round}"] if self.round is not None else []
            place = f" ({', '.join(where)})" if where else ""
            head = f"fork of {self.session_id} at step {self.seq}{place}"
        return f"{head}: {self.note}" if self.note else head


def origin_data(origin: SessionOrigin) -> dict[str, Any]:
    """The origin as JSON data (its fields, None left out)."""
    return {key: value for key, value in attrs.asdict(origin).items() if value is not None}


def origin_text(origin: SessionOrigin) -> str:
    """The origin as the JSON text a journal stores (its fields, sorted, None left out)."""
    return json.dumps(origin_data(origin), sort_keys=True, ensure_ascii=False)


def origin_of(text: str | bytes | dict[str, Any]) -> SessionOrigin:
    """An origin back from what a journal stored (`ValueError` if it is not one)."""
    data = json.loads(text) if isinstance(text, str | bytes) else text
    if not isinstance(data, dict) or data.get("kind") not in ("fork", "rerun"):
        raise ValueError(f"not a session origin: {data!r}")
    known = {field.name for field in attrs.fields(SessionOrigin)}
    return SessionOrigin(**{key: value for key, value in data.items() if key in known})


def stored_origin(
    journal: str, session_id: str, stored: str | bytes | dict[str, Any]
) -> SessionOrigin:
    """The origin a journal stored for a session; `JournalCorrupt` naming both if it is none."""
    try:
        return origin_of(stored)
    except (ValueError, TypeError) as exc:
        raise JournalCorrupt(journal, f"undecodable origin ({exc})", session_id=session_id) from exc
