"""The agent both processes of the agent approval test build: one helper needs approval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from toolreel.shell import AgentDefinition, AgentOptions, OutputTool, tool


@attrs.frozen
class Invoice:
    number: str
    total: float


def definition(effects: str, **overrides: Any) -> AgentDefinition[str, Invoice]:
    """An invoice agent whose `delete_row` helper waits for a human (it appends to EFFECTS)."""

    @tool(requires_approval=True)
    def delete_row(row: int) -> str:
        """Delete a row (recorded in EFFECTS instead)."""
        with Path(effects).open("a", encoding="utf-8") as file:
            file.write(f"{row}\n")
        return f"deleted row {row}"

    @tool
    def currency_rate(currency: str) -> float:
        """Euros per unit of `currency`."""
        return {"USD": 0.92}[currency]

    return AgentDefinition(
        build_prompt=lambda source: f"Extract the invoice from: {source}",
        output=OutputTool.of(Invoice, name="record_invoice"),
        helpers=[currency_rate, delete_row],
        **overrides,
    )


def options(base_url: str, journal: str | Path, **extra: Any) -> AgentOptions:
    """The run's options (the same in every process)."""
    return AgentOptions(
        model="test",
        base_url=base_url,
        api_key="sk-test",
        journal=journal,
        session_id="inv",
        **extra,
    )
