"""The scripted calculator model and the demo that runs the calculator agent against it."""

from __future__ import annotations

import pytest

from toolreel.shell import demo
from toolreel.shell.scripted import calculator
from toolreel.shell.scripted._calculator import Step, plan


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("What is 25 plus 17?", [[Step("add", 25, 17)]]),
        ("Calculate 144 divided by 12", [[Step("divide", 144, 12)]]),
        ("What's 7 times 8, then add 5?", [[Step("multiply", 7, 8)], [Step("add", None, 5)]]),
        ("What is 2 plus 3 and 4 times 5?", [[Step("add", 2, 3), Step("multiply", 4, 5)]]),
        ("Tell me a joke", []),
    ],
)
def test_plan_reads_chained_and_parallel_steps(prompt: str, expected: list) -> None:
    assert plan(prompt) == expected


def test_independent_steps_are_parallel_calls_and_a_chain_uses_the_last_result() -> None:
    first = calculator({"messages": [{"role": "user", "content": "2 plus 3 and 4 times 5"}]})
    assert first.calls == (
        ("call_1_1", "add", '{"a": 2, "b": 3}'),
        ("call_1_2", "multiply", '{"a": 4, "b": 5}'),
    )
    user = {"role": "user", "content": "What's 7 times 8, then add 5?"}
    asked = {"role": "assistant", "tool_calls": [{"id": "c"}]}
    second = calculator(
        {"messages": [user, asked, {"role": "tool", "tool_call_id": "c", "content": "56"}]}
    )
    assert second.calls == (("call_2_1", "add", '{"a": 56, "b": 5}'),)
    answered = {"role": "tool", "tool_call_id": "d", "content": '{"result": 61.0}'}
    final = calculator({"messages": [user, asked, answered, asked, answered]})
    assert (final.calls, final.text) == ((), "The answer is 61.")
    assert (
        "only do arithmetic" in calculator({"messages": [{"role": "user", "content": "hi"}]}).text
    )


def test_no_call_id_repeats_in_a_session_as_a_providers_would_not() -> None:
    asked = {"role": "assistant", "tool_calls": [{"id": "call_1_1"}]}
    earlier = [
        {"role": "user", "content": "What is 25 plus 17?"},
        asked,
        {"role": "tool", "tool_call_id": "call_1_1", "content": "42"},
        {"role": "assistant", "content": "The answer is 42."},
    ]
    again = calculator({"messages": [*earlier, {"role": "user", "content": "What is 2 plus 3?"}]})
    assert again.calls == (("call_2_1", "add", '{"a": 2, "b": 3}'),)


def test_the_demo_answers_the_three_calculator_prompts(capsys, monkeypatch, tmp_path) -> None:
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    assert demo.main(["--journal", str(tmp_path / "demo.db")]) == 0
    out = capsys.readouterr().out
    assert "scripted calculator model" in out
    for answer in ("The answer is 42.", "The answer is 12.", "The answer is 61."):
        assert answer in out
    assert "tool call: add({'a': 56, 'b': 5})" in out  # the chained round used the product
    assert "History: 6 messages" in out
    assert "Replay: all " in out and "gave the recorded effects again" in out
    assert "## Turn 3" in out and "→ multiply" in out  # the transcript
    assert (tmp_path / "demo.db").exists()


def test_the_openai_reply_chains_rounds_and_runs_independent_steps_in_parallel() -> None:
    first = calculator({"messages": [{"role": "user", "content": "2 plus 3 and 4 times 5"}]})
    assert [name for _, name, _ in first.calls] == ["add", "multiply"]
    chained = calculator(
        {
            "messages": [
                {"role": "user", "content": "7 times 8, then add 5"},
                {"role": "assistant", "tool_calls": [{"id": "c"}]},
                {"role": "tool", "tool_call_id": "c", "content": '{"result": 56.0}'},
            ]
        }
    )
    assert chained.calls == (("call_2_1", "add", '{"a": 56, "b": 5}'),)
