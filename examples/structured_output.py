"""A structured-output agent: an invoice read from an email, validated, typed.

    python examples/structured_output.py                # offline: a function plays the model
    python examples/structured_output.py --base-url http://127.0.0.1:11434/v1 --model qwen2.5:14b
    OPENAI_API_KEY=sk-... python examples/structured_output.py --model gpt-4o-mini

The model may call the helper `currency_rate`, then calls the output tool whose arguments
are the invoice. The output is checked against the `Invoice` type, then by
`totals_add_up`; a problem goes back to the model and a new attempt starts. Offline, the
stand-in model forgets to convert the total to euros at first, and corrects it.
"""

from __future__ import annotations

import argparse
import os

import anyio
import attrs

from toolreel.core import ChatMessage
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    OutputTool,
    execute_agent,
    tool,
)
from toolreel.testing import FunctionModel, ModelInfo, ToolCalls, call


@attrs.frozen
class Line:
    """One line of an invoice."""

    description: str
    quantity: int
    unit_price: float


@attrs.frozen
class Invoice:
    """An invoice, its total also in euros."""

    number: str
    currency: str
    lines: list[Line]
    total: float
    total_eur: float


RATES = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}


@tool
def currency_rate(currency: str) -> float:
    """How many euros one unit of `currency` is worth."""
    return RATES[currency]  # an unknown currency: an error result the model reads


def totals_add_up(invoice: Invoice) -> list[str]:
    """Business rules the schema cannot express; each problem goes back to the model."""
    problems = []
    lines = sum(line.quantity * line.unit_price for line in invoice.lines)
    if abs(lines - invoice.total) > 0.005:
        problems.append(f"total is {invoice.total:.2f} but the lines add up to {lines:.2f}")
    euros = invoice.total * RATES[invoice.currency]
    if abs(euros - invoice.total_eur) > 0.005:
        problems.append(f"total_eur is {invoice.total_eur:.2f}, expected {euros:.2f}")
    return problems


extract_invoice: AgentDefinition[str, Invoice] = AgentDefinition(
    system_prompt="You extract invoices. Convert totals to euros with currency_rate.",
    build_prompt=lambda text: f"Extract the invoice from this email:\n\n{text}",
    helpers=[currency_rate],
    output=OutputTool.of(Invoice, name="record_invoice", description="Record the invoice."),
    validators=[totals_add_up],
    max_attempts=3,
)

EMAIL = """Invoice INV-2024-117 from Acme Corp.
3 x Widget at $120.00, 1 x Installation at $250.00. Total due: $610.00"""


def stand_in(messages: tuple[ChatMessage, ...], info: ModelInfo) -> ToolCalls:
    """The offline model: look up the rate, record the invoice; convert once told to."""
    if not any(message.tool_rounds for message in messages):
        return ToolCalls([call("currency_rate", currency="USD")])
    # A failed validation comes back as a message listing the problems.
    told = any("total_eur is" in message.content for message in messages)
    lines = [
        {"description": "Widget", "quantity": 3, "unit_price": 120.0},
        {"description": "Installation", "quantity": 1, "unit_price": 250.0},
    ]
    invoice = {"number": "INV-2024-117", "currency": "USD", "lines": lines, "total": 610.0}
    return ToolCalls([call("record_invoice", **invoice, total_eur=561.2 if told else 610.0)])


def main() -> None:
    """Run the agent; print the invoice, or why there is none."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server's .../v1 URL")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()

    real = bool(args.base_url or os.environ.get("OPENAI_API_KEY"))
    options = AgentOptions(base_url=args.base_url, model=args.model if real else "")
    model = None if real else FunctionModel(stand_in)
    result = anyio.run(lambda: execute_agent(extract_invoice, EMAIL, options, model=model))
    if isinstance(result, AgentSuccess):
        invoice = result.output  # an Invoice
        print(invoice.number, invoice.total, invoice.currency, "=", invoice.total_eur, "EUR")
    else:
        print(result.error.code, result.error.message)
    meta = result.metadata
    print(f"{meta.attempts} attempts, {meta.iterations} iterations")


if __name__ == "__main__":
    main()
