"""The errors of toolreel.temporal: a Temporal server or workflow that cannot serve a request."""

from __future__ import annotations

from toolreel.core import ToolreelError


class TemporalError(ToolreelError):
    """A Temporal server that cannot be reached, or a workflow that is not there or failed."""
