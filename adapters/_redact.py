"""Redaction: the one step every text that leaves the process or is stored passes through.

A `Redactor` knows the configured secrets (API keys) and replaces each, and
its echoes, with `***`. It is applied where text crosses the boundary: events
before they reach the reducer (so the journal, exports, transcripts, notices
and errors never hold a key), log records, and the CLI's messages.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

__all__ = ["MASK", "Redactor"]

MASK = "***"


@attrs.frozen
class Redactor:
    """Replaces the secrets it was given (longest first) with `***`."""

    secrets: tuple[str, ...] = ()

    @classmethod
    def of(cls, secrets: Iterable[str | None]) -> Redactor:
        """A redactor for the non-empty secrets given."""
        found = {s for s in secrets if s}
        return cls(tuple(sorted(found, key=len, reverse=True)))

    def text(self, text: str) -> str:
        """`text` with every secret masked."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def __repr__(self) -> str:
        """Never the secrets."""
        return f"Redactor({len(self.secrets)} secret(s))"
