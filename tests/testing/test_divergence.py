"""What a user's test suite shows when a replayed request differs from the recorded one.

Each case is a user's test (run by pytester) that records a session, changes one
thing (the prompt, the system prompt, a tool's schema, the history, a model
setting) and reruns or verifies it: the failure names the message, tool or
setting that changed and shows the change as a diff, never a digest alone.
"""

from __future__ import annotations

import re

import pytest

CHAT = '''
import anyio
import attrs
import pytest

from toolreel.adapters import JSONLJournal
from toolreel.shell import Client, Recording, tool, verify
from toolreel.shell.hooks import HOOK_PRE_TOOL_USE, HookDecision
from toolreel.testing import text, tool_calls


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def recorded(tmp_path, scripted_model):
    model = scripted_model([tool_calls(("c1", "add", {"a": 2, "b": 3})), text("5")], http=False)
    options = model.options(tools=[add], auto_execute_tools=True, system_prompt="Be brief.")
    path = tmp_path / "chat.jsonl"

    async def main():
        async with Client(attrs.evolve(options, journal=str(path), session_id="chat"),
                          model=model.model) as client:
            await client.query("What is 2 + 3?")
            await client.wait()

    anyio.run(main)
    return path, options


def test_system_prompt(recorded):
    path, options = recorded
    anyio.run(Recording.from_file(path).rerun, attrs.evolve(options, system_prompt="Be verbose."))


def test_tool_schema(recorded):
    path, options = recorded

    @tool("add", "Add two integers.")
    def add_numbers(a: int, b: float) -> float:
        return a + b

    anyio.run(Recording.from_file(path).rerun, attrs.evolve(options, tools=[add_numbers]))


def test_model_setting(recorded):
    path, options = recorded
    anyio.run(Recording.from_file(path).rerun, attrs.evolve(options, temperature=0.7))


def test_history(recorded):
    path, options = recorded

    def no_adding(event):
        return HookDecision(continue_=False, reason="no adding today")

    hooks = {HOOK_PRE_TOOL_USE: [no_adding]}
    anyio.run(Recording.from_file(path).rerun, attrs.evolve(options, hooks=hooks))


def test_prompt(recorded):
    path, options = recorded

    async def main():
        async with Client(options, model=Recording.from_file(path)) as client:
            await client.query("What is 2 + 4?")
            await client.wait()

    anyio.run(main)


def test_verify(recorded):
    path, _ = recorded
    journal = JSONLJournal(path)
    changed = attrs.evolve(journal.config("chat"), system_prompt="Be verbose.")
    verify(journal, "chat", config=changed)
'''

AGENT = '''
import anyio
import attrs
import pytest

from toolreel.adapters import JSONLJournal
from toolreel.shell import AgentDefinition, OutputTool, Recording, execute_agent, tool, verify
from toolreel.testing import tool_calls


@attrs.frozen
class Invoice:
    number: str
    total: float


@attrs.frozen
class DatedInvoice:
    number: str
    total: float
    date: str


@tool
def currency_rate(currency: str) -> float:
    """Euros per unit of currency."""
    return 0.92


def positive(invoice):
    return [] if invoice.total > 0 else ["total must be positive"]


def agent(**overrides):
    fields = dict(
        build_prompt=lambda source: f"Extract the invoice from: {source}",
        output=OutputTool.of(Invoice, name="record_invoice"),
        helpers=[currency_rate],
        validators=[positive],
        system_prompt="You extract invoices.",
    )
    fields.update(overrides)
    return AgentDefinition(**fields)


@pytest.fixture
def recorded(tmp_path, scripted_model):
    model = scripted_model([
        tool_calls(("c1", "currency_rate", {"currency": "USD"})),
        tool_calls(("c2", "record_invoice", {"number": "INV-1", "total": -1})),
        tool_calls(("c3", "record_invoice", {"number": "INV-1", "total": 40})),
    ], http=False)
    path = tmp_path / "agent.jsonl"
    anyio.run(lambda: execute_agent(agent(), "INV-1 40", model.options(), model=model.model,
                                    journal=path, session_id="run"))
    return path, model.options()


def test_agent_system_prompt(recorded):
    path, options = recorded
    changed = agent(system_prompt="You extract receipts.")
    anyio.run(lambda: Recording.from_file(path).rerun(options, agent=changed))


def test_agent_output_schema(recorded):
    path, options = recorded
    changed = agent(output=OutputTool.of(DatedInvoice, name="record_invoice"))
    anyio.run(lambda: Recording.from_file(path).rerun(options, agent=changed))


def test_agent_history(recorded):
    path, options = recorded

    def strictly_positive(invoice):
        return [] if invoice.total > 0 else ["the total must be above zero"]

    changed = agent(validators=[strictly_positive])
    anyio.run(lambda: Recording.from_file(path).rerun(options, agent=changed))


def test_agent_verify(recorded):
    path, _ = recorded
    journal = JSONLJournal(path)
    verify(journal, "run", config=attrs.evolve(journal.config("run"), max_tokens=50))
'''


#: Failure reports of a user's module, by test name, once it ran (one pytester run a module).
REPORTS: dict[str, dict[str, str]] = {}


def report(pytester: pytest.Pytester, source: str, name: str) -> str:
    """The failure report of the user's test `name` in the module `source` (every test fails)."""
    if source not in REPORTS:
        pytester.makepyfile(test_user=source)
        result = pytester.runpytest(
            "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--tb=short"
        )
        result.assert_outcomes(failed=source.count("\ndef test_"))
        parts = re.split(r"^_{3,} (\w+) _{3,}$", result.stdout.str(), flags=re.M)
        REPORTS[source] = dict(zip(parts[1::2], parts[2::2], strict=True))
    return REPORTS[source][name]


def test_a_changed_system_prompt_shows_as_a_text_diff(pytester: pytest.Pytester) -> None:
    text = report(pytester, CHAT, "test_system_prompt")
    assert "RequestMismatch: model call 1 differs from the recording:" in text
    assert "system prompt:\nE     -Be brief.\nE     +Be verbose." in text
    assert "messages_digest" not in text


def test_a_changed_tool_schema_shows_as_a_pretty_json_diff(pytester: pytest.Pytester) -> None:
    text = report(pytester, CHAT, "test_tool_schema")
    assert "tool 'add' parameters:" in text
    assert 'E     -      "type": "integer"\nE     +      "type": "number"' in text
    assert '\\"' not in text  # JSON shown pretty, not as an escaped string


def test_a_changed_model_setting_shows_old_and_new(pytester: pytest.Pytester) -> None:
    text = report(pytester, CHAT, "test_model_setting")
    assert "temperature: null → 0.7" in text


def test_a_changed_history_names_the_message_and_field(pytester: pytest.Pytester) -> None:
    text = report(pytester, CHAT, "test_history")
    assert "model call 2 differs from the recording:" in text
    assert "message 2 (assistant) round 1 result 1: add [c1] → add [c1] (error)" in text
    assert "message 2 (assistant) round 1 result 1 content:\nE     -5\nE     +" in text
    assert "no adding today" in text


def test_a_changed_prompt_names_the_user_message(pytester: pytest.Pytester) -> None:
    text = report(pytester, CHAT, "test_prompt")
    assert "message 1 (user) content:\nE     -What is 2 + 3?\nE     +What is 2 + 4?" in text


def test_verify_shows_the_request_diff_not_the_digest(pytester: pytest.Pytester) -> None:
    text = report(pytester, CHAT, "test_verify")
    assert "ReplayDiverged: session 'chat' diverges at step 1" in text
    assert "model request:" in text
    assert "system prompt:\nE     -Be brief.\nE     +Be verbose." in text
    assert "messages_digest" not in text


def test_an_agent_runs_changed_system_prompt_shows_as_a_diff(pytester: pytest.Pytester) -> None:
    text = report(pytester, AGENT, "test_agent_system_prompt")
    assert "model call 1 differs from the recording:" in text
    assert "-You extract invoices." in text and "+You extract receipts." in text


def test_an_agent_runs_changed_output_schema_shows_the_added_field(
    pytester: pytest.Pytester,
) -> None:
    text = report(pytester, AGENT, "test_agent_output_schema")
    assert "tool 'record_invoice' parameters:" in text
    assert '+    "date": {' in text


def test_an_agent_runs_changed_feedback_shows_in_the_history(pytester: pytest.Pytester) -> None:
    text = report(pytester, AGENT, "test_agent_history")
    assert "model call 3 differs from the recording:" in text
    assert "message 3 (user) content:" in text
    assert "+" in text and "the total must be above zero" in text


def test_verifying_an_agent_run_under_a_new_setting_shows_it(pytester: pytest.Pytester) -> None:
    text = report(pytester, AGENT, "test_agent_verify")
    assert "diverges at step 1" in text
    assert "max_tokens: null → 50" in text
