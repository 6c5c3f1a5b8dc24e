"""Replay: fold a journaled session through `step` again and compare every effect.

Identical effects give back the rebuilt `Session`; the first difference is a
`Divergence` naming the sequence number, the event that led to it, and both
sides as a readable diff — what a user sees after changing their prompt,
their tools or their toolreel version. Pass `config=` to replay the recorded
events under a changed configuration.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import attrs

from toolreel.adapters import Journal, SessionNotFound, effect_record, unstructure
from toolreel.adapters._journal import StepEvent, loop_configs, loop_event
from toolreel.adapters._session import Session, SessionBuilder, with_configs
from toolreel.core import LoopConfig, StepError

from ._errors import ReplayError
from ._journal_files import journal_name


@attrs.frozen(kw_only=True)
class Divergence:
    """Where a replay first produced different effects from the recorded ones."""

    session_id: str
    seq: int
    event: StepEvent
    recorded: tuple[dict[str, Any], ...]
    replayed: tuple[dict[str, Any], ...]
    error: str | None = None

    @property
    def diff(self) -> str:
        """The two sides as a unified diff of pretty JSON."""
        old = _pretty(self.recorded).splitlines()
        new = [self.error] if self.error else _pretty(self.replayed).splitlines()
        lines = difflib.unified_diff(old, new, "recorded", "replayed", lineterm="", n=3)
        return "\n".join(lines)

    def __str__(self) -> str:
        """Sequence number, event and diff, for a person."""
        event = json.dumps({"type": type(self.event).__name__, **unstructure(self.event)})
        return (
            f"session {self.session_id!r} diverges at step {self.seq}\nevent: {event}\n{self.diff}"
        )


class ReplayDiverged(ReplayError):
    """Raised by `replay(..., strict=True)` on a divergence."""

    def __init__(self, divergence: Divergence) -> None:
        """Carry the divergence; its text is the message."""
        super().__init__(str(divergence))
        self.divergence = divergence


def _pretty(effects: tuple[dict[str, Any], ...]) -> str:
    """Effects as sorted, indented JSON."""
    return json.dumps(list(effects), indent=2, sort_keys=True, ensure_ascii=False)


def replay(
    journal: Journal, session_id: str, *, config: LoopConfig | None = None
) -> Session | Divergence:
    """The rebuilt session if every effect matches the journal, else the first divergence.

    Each step replays under the config the session recorded for it (a continued
    session may have changed it), or all under `config` when one is given. An
    unknown `session_id` is `SessionNotFound`.
    """
    if session_id not in journal.sessions():
        raise SessionNotFound(session_id, journal_name(journal))
    configs = [(0, config)] if config is not None else loop_configs(journal, session_id)
    builder = SessionBuilder(session_id, configs[0][1])
    for entry, change in with_configs(journal.entries(session_id), configs):
        if change is not None:
            builder.reconfigure(change)
        try:
            effects = builder.add(loop_event(entry.event, session_id))
        except StepError as exc:
            return Divergence(
                session_id=session_id,
                seq=entry.seq,
                event=entry.event,
                recorded=entry.effects,
                replayed=(),
                error=f"the event cannot happen here: {exc}",
            )
        replayed = tuple(effect_record(effect) for effect in effects)
        if replayed != entry.effects:
            return Divergence(
                session_id=session_id,
                seq=entry.seq,
                event=entry.event,
                recorded=entry.effects,
                replayed=replayed,
            )
    return builder.session()


def verify(journal: Journal, session_id: str, *, config: LoopConfig | None = None) -> Session:
    """Like `replay`, but a divergence raises `ReplayDiverged`."""
    result = replay(journal, session_id, config=config)
    if isinstance(result, Divergence):
        raise ReplayDiverged(result)
    return result
