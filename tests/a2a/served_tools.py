"""Tools that tests/a2a/test_a2a_cli.py serves with `toolreel a2a-serve`."""

from __future__ import annotations


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


TOOLS = [add]
