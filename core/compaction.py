"""Compaction: how much of a long conversation each model request carries.

`LoopConfig(compaction=...)` takes one of `KeepTurns`, `KeepTokens` or `Summarise`
(the closed union `Compaction`; None, the default, carries the whole history).
What each does, how tokens are counted and what is never left out is said in
core/_compaction.py; the rule that applies them is rule 18 of core/_step.py, and
each compaction is told as `toolreel.core.notices.ContextCompacted`.
"""

from __future__ import annotations

from ._compaction import Compaction, KeepTokens, KeepTurns, Summarise

__all__ = ["Compaction", "KeepTokens", "KeepTurns", "Summarise"]
