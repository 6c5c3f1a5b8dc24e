"""`--keep-turns N`, `--context-tokens N`: how much of a long chat each request carries.

Either flag becomes the session's compaction policy (core/_compaction.py) on the
options of `run` and `chat`: `--keep-turns` carries the last N turns,
`--context-tokens` as many of the latest turns as fit in N tokens. The policy is
in the journal's config like `--max-tokens`, so a later `approve` / `deny` keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from toolreel.core.compaction import Compaction, KeepTokens, KeepTurns


def options() -> list[Callable[[Any], Any]]:
    """The compaction's click options, in help order."""
    return [
        click.option(
            "--keep-turns",
            type=click.IntRange(min=1),
            metavar="N",
            help="Send the model only the last N turns of the chat (older ones stay journaled).",
        ),
        click.option(
            "--context-tokens",
            type=click.IntRange(min=1),
            metavar="N",
            help="Send the model only the latest turns that fit in N tokens.",
        ),
    ]


def compaction_of(params: dict[str, Any]) -> Compaction | None:
    """The policy the flags give (None: neither); both at once is a usage error."""
    turns, tokens = params.get("keep_turns"), params.get("context_tokens")
    if turns is not None and tokens is not None:
        raise click.UsageError("give --keep-turns or --context-tokens, not both")
    if turns is not None:
        return KeepTurns(turns=turns)
    if tokens is not None:
        return KeepTokens(tokens=tokens)
    return None
