"""Tools and agents for the worker processes of tests/temporal: the calculator's, one tool
with side effects, and an invoice agent (`AGENTS`).

`record` is not idempotent: each run appends a line to the file named by
TOOLREEL_TEST_RUNS, then waits (until TOOLREEL_TEST_HOLD, if set, is removed)
so a test can kill its worker while it runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import attrs

from toolreel.shell import AgentDefinition, OutputTool, tool
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


@attrs.frozen
class Invoice:
    number: str
    total: float


@tool
def currency_rate(currency: str) -> float:
    """Euros per unit of `currency`."""
    return {"USD": 0.92}[currency]


def positive(invoice: Invoice) -> list[str]:
    """A validator: an invoice's total is above zero."""
    return [] if invoice.total > 0 else ["total must be positive"]


INVOICES = AgentDefinition(
    build_prompt=lambda source: f"Extract the invoice from: {source}",
    system_prompt="You extract invoices.",
    output=OutputTool.of(Invoice, name="record_invoice"),
    helpers=[currency_rate],
    validators=[positive],
)

AGENTS = {"invoices": INVOICES}
