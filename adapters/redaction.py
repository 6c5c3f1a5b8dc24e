"""Redaction: keys never leave the process, and never reach a journal, a log or a message.

For toolreel's own layers (the shell, the command line, toolreel.testing and
toolreel.temporal), which apply it where text crosses the boundary; how echoes of
a key are found is in adapters/_redact.py.

- `Redactor`: the configured secrets; masks each, and every echo of one, as `MASK`.
- `held_back`: a model stream with the end of each piece held back until it can no
  longer grow into an echo (adapters/_held.py), so a key split across pieces is
  masked too.
- `LOG_FILTER`, `logger`: the logging filter on the "toolreel" loggers, and a logger
  under "toolreel" that carries it.
- `clean_key`: a key as it enters, stripped; a key with inner whitespace or control
  characters refused.
- `is_dsn`, `redacted_dsn`: a PostgreSQL URL recognised, and shown with its password
  masked.
"""

from __future__ import annotations

from ._dsn import is_dsn, redacted_dsn
from ._held import held_back
from ._redact import LOG_FILTER, MASK, Redactor, clean_key, logger

__all__ = [
    "LOG_FILTER",
    "MASK",
    "Redactor",
    "clean_key",
    "held_back",
    "is_dsn",
    "logger",
    "redacted_dsn",
]
