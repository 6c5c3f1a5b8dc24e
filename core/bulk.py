"""Folding a run of stored deltas at once: exactly what `step` makes of each, in one call.

A replay reads a SQLite journal's runs of text deltas and argument fragments whole
(adapters/_fold.py, adapters/_rows.py) and folds each with one string join instead
of one state per delta, where `text_run` or `fragment_run` accepts it (rule 2 of
core/_step.py); where either declines (None), the run is folded step by step.
"""

from __future__ import annotations

from ._step import fragment_run, text_run

__all__ = ["fragment_run", "text_run"]
