"""The structured-output examples, run against a scripted OpenAI-compatible server (the model's
side of the conversation is scripted below): an invoice agent with reflection, as a user writes
it, and the docs' Pydantic receipt."""

from __future__ import annotations

import anyio
from pages import python_block

from toolreel.shell import AgentOptions, AgentSuccess, execute_agent
from toolreel.shell.scripted import ScriptedServer, tool_calls

LOCAL_SERVER = "http://localhost:11434/v1"  # Ollama

EXAMPLE = '''\
import anyio
import attrs
from toolreel.shell import (
    AgentDefinition, AgentOptions, AgentSuccess, OutputTool, execute_agent, tool,
)

@attrs.frozen
class Line:
    description: str
    quantity: int
    unit_price: float

@attrs.frozen
class Invoice:
    number: str
    currency: str
    lines: list[Line]
    total: float
    total_eur: float

RATES = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}

@tool
def currency_rate(currency: str) -> float:
    """How many euros one unit of `currency` is worth."""
    return RATES[currency]                 # an unknown currency: an error result the model reads

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

def show(invoice: Invoice) -> str:
    """Reflection: the model sees its output as a person would before it submits."""
    rows = [f"  {l.quantity} x {l.description} @ {l.unit_price:.2f}" for l in invoice.lines]
    return "\\n".join([f"Invoice {invoice.number} ({invoice.currency})", *rows,
                      f"  total {invoice.total:.2f} = {invoice.total_eur:.2f} EUR"])

extract_invoice: AgentDefinition[str, Invoice] = AgentDefinition(
    system_prompt="You extract invoices. Convert totals to euros with currency_rate.",
    build_prompt=lambda text: f"Extract the invoice from this email:\\n\\n{text}",
    helpers=[currency_rate],
    output=OutputTool.of(Invoice, name="record_invoice", description="Record the invoice.",
                         reflection_handler=show),   # reflection on: `submit` is offered too
    validators=[totals_add_up],
    max_attempts=3,
    max_iterations_per_attempt=15,
)

EMAIL = """Invoice INV-2024-117 from Acme Corp.
3 x Widget at $120.00, 1 x Installation at $250.00. Total due: $610.00"""

async def main():
    options = AgentOptions(model="qwen2.5:14b", base_url="http://localhost:11434/v1")
    result = await execute_agent(extract_invoice, EMAIL, options)
    if isinstance(result, AgentSuccess):
        invoice = result.output                                   # an Invoice
        print(invoice.number, invoice.total, invoice.currency, "=", invoice.total_eur, "EUR")
    else:
        print(result.error.code, result.error.message, result.error.context)
    meta = result.metadata
    print(f"{meta.attempts} attempts, {meta.iterations} iterations, "
          f"{meta.usage.total_tokens} tokens, {len(meta.callback_errors)} callback errors")

anyio.run(main)
'''

LINES = [
    {"description": "Widget", "quantity": 3, "unit_price": 120.0},
    {"description": "Installation", "quantity": 1, "unit_price": 250.0},
]
FIRST = {"number": "INV-2024-117", "currency": "USD", "lines": LINES, "total": 610.0}
# The model looks the rate up, records the invoice (forgetting to convert), sees the
# reflection, submits; validation fails; it records the corrected invoice and submits.
SCRIPT = [
    tool_calls(("call_1", "currency_rate", {"currency": "USD"})),
    tool_calls(("call_2", "record_invoice", {**FIRST, "total_eur": 610.0})),
    tool_calls(("call_3", "submit", {})),
    tool_calls(
        ("call_4", "record_invoice", {**FIRST, "total_eur": 561.2}), ("call_5", "submit", {})
    ),
]


def test_the_invoice_example_runs_against_a_local_server(capsys) -> None:
    with ScriptedServer(SCRIPT) as server:
        code = EXAMPLE.replace(LOCAL_SERVER, server.url)
        # compiled as a script of its own (not inheriting this module's __future__ imports)
        exec(compile(code, "invoice.py", "exec", dont_inherit=True), {"__name__": "__main__"})
        requests = server.requests
    assert capsys.readouterr().out == (
        "INV-2024-117 610.0 USD = 561.2 EUR\n"
        "2 attempts, 4 iterations, 60 tokens, 0 callback errors\n"
    )
    reflection = requests[2]["messages"][-1]
    assert reflection == {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": "Invoice INV-2024-117 (USD)\n"
        "  3 x Widget @ 120.00\n"
        "  1 x Installation @ 250.00\n"
        "  total 610.00 = 610.00 EUR",
    }
    assert requests[3]["messages"][-1]["content"] == (
        "Your output failed validation (attempt 1 of 3):\n"
        "- total_eur is 610.00, expected 561.20\n"
        "Call record_invoice again with a corrected output, then call submit."
    )


def test_the_docs_pydantic_output_is_validated_by_pydantic_and_corrected() -> None:
    namespace: dict[str, object] = {"__name__": "readme_receipt"}
    block = python_block("docs/guides/structured-output.md", "class Receipt(BaseModel)")
    exec(compile(block, "structured-output.md", "exec", dont_inherit=True), namespace)
    wrong = {"shop": "Acme", "total": -5, "currency": "JPY"}
    right = {"shop": "Acme", "total": 5, "currency": "EUR"}
    script = [
        tool_calls(("c1", "record_receipt", wrong)),
        tool_calls(("c2", "record_receipt", right)),
    ]
    with ScriptedServer(script) as server:
        options = AgentOptions(model="test", base_url=server.url, api_key="sk-test")
        result = anyio.run(execute_agent, namespace["read_receipt"], "Acme, 5 EUR", options)
        requests = server.requests
    assert isinstance(result, AgentSuccess)
    assert result.metadata.validation_errors[0].problems == (
        "$.total: must be greater than or equal to 0, got -5",
        "$.currency: expected 'EUR', 'USD' or 'GBP', got 'JPY'",
    )
    assert (
        "$.total: must be greater than or equal to 0, got -5"
        in (requests[1]["messages"][-1]["content"])
    )
    receipt = namespace["Receipt"]
    assert result.output == receipt(shop="Acme", total=5.0, currency="EUR")  # type: ignore[operator]
    assert requests[0]["tools"][0]["function"]["parameters"]["properties"]["total"] == {
        "type": "number",
        "minimum": 0,
        "description": "What was paid, tax included",
    }
