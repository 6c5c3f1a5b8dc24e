"""Tools for the worker processes of tests/temporal: the calculator's, and one with side effects.

`record` is not idempotent: each run appends a line to the file named by
TOOLREEL_TEST_RUNS, then waits (until TOOLREEL_TEST_HOLD, if set, is removed)
so a test can kill its worker while it runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from toolreel.shell import tool
from toolreel.shell.demo import TOOLS as CALCULATOR


@tool
def record(note: str) -> str:
    """Write a note down (not idempotent: every run writes one)."""
    with Path(os.environ["TOOLREEL_TEST_RUNS"]).open("a") as runs:
        runs.write(note + "\n")
    hold = os.environ.get("TOOLREEL_TEST_HOLD")
    while hold and Path(hold).exists():
        time.sleep(0.05)
    return f"noted: {note}"


TOOLS = [*CALCULATOR, record]
