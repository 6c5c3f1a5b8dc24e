"""The built-in checks of `toolreel.shell.checks`, and how any check's return becomes a Verdict.

Sessions are built by hand here: a turn's outcome, its answer, its tool calls, its usage.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from toolreel.adapters import Session, TurnSummary
from toolreel.core import ChatMessage, ConfigError, LoopConfig, Phase, ToolCall, ToolRound, Usage
from toolreel.core.budget import Budget, Price
from toolreel.core.outcomes import FinishReason
from toolreel.shell import Verdict
from toolreel.shell import checks as ck
from toolreel.shell._verdict import judge

COMPLETED = FinishReason.COMPLETED


def session(
    *answers: str,
    calls: tuple[tuple[str, str], ...] = (),
    reasons: tuple[FinishReason | None, ...] | None = None,
    tokens: tuple[int, int] = (10, 5),
    model: str = "m",
    budget: Budget | None = None,
) -> Session:
    """A session of one turn per answer; the calls (name, arguments) in the first."""
    reasons = reasons or (COMPLETED,) * len(answers)
    rounds = (
        ToolRound(
            assistant_text="",
            tool_calls=tuple(
                ToolCall(id=f"c{n}", name=name, arguments=args)
                for n, (name, args) in enumerate(calls)
            ),
            results=(),
        ),
    )
    turns, history = [], []
    for number, (text, reason) in enumerate(zip(answers, reasons, strict=True)):
        message = ChatMessage(
            role="assistant", content=text, tool_rounds=rounds if number == 0 and calls else ()
        )
        history += [ChatMessage(role="user", content=f"q{number}"), message]
        usage = Usage(input_tokens=tokens[0], output_tokens=tokens[1]) if number == 0 else Usage()
        turns.append(
            TurnSummary(prompt=f"q{number}", reason=reason, text=text, usage=usage, answer=message)
        )
    return Session(
        session_id="s",
        config=LoopConfig(model=model, budget=budget),
        history=tuple(history),
        turns=tuple(turns),
        events=0,
        phase=Phase.IDLE,
    )


def verdict(check: Any, original: Session, candidate: Session) -> Verdict:
    return anyio.run(judge, check, original, candidate)


def test_same_outcome_names_the_first_turn_that_ended_otherwise() -> None:
    one = session("a", "b")
    other = session("a", "b", reasons=(COMPLETED, FinishReason.MAX_ITERATIONS))
    assert verdict(ck.same_outcome(), one, one) == Verdict(
        passed=True, reason="completed, completed"
    )
    assert verdict(ck.same_outcome(), one, other) == Verdict(
        passed=False, reason="turn 2: completed → max_iterations"
    )
    assert verdict(ck.same_outcome(), one, session("a")).reason == "2 turn(s) → 1"


def test_same_tools_counts_each_tools_calls_and_may_compare_arguments() -> None:
    original = session("x", calls=(("add", '{"a": 1, "b": 2}'), ("mul", '{"a": 3}')))
    reordered = session("x", calls=(("mul", '{"a": 3}'), ("add", '{"b":2,"a":1}')))
    other_args = session("x", calls=(("add", '{"a": 2}'), ("mul", '{"a": 3}')))
    twice = session("x", calls=(("add", "{}"), ("add", "{}")))
    assert verdict(ck.same_tools(), original, reordered).passed
    assert verdict(ck.same_tools(), original, other_args).passed
    assert verdict(ck.same_tools(), original, twice) == Verdict(
        passed=False, reason="add +1, mul -1"
    )
    assert verdict(ck.same_tools(arguments=True), original, reordered).passed
    assert not verdict(ck.same_tools(arguments=True), original, other_args).passed
    assert ck.same_tools(arguments=True).name == "same tool calls"  # type: ignore[attr-defined]


def test_the_answer_checks_read_the_last_turns_text() -> None:
    original, candidate = session("first", "The total is 42."), session("x", " The total is  42. ")
    assert verdict(ck.same_answer(), original, candidate).passed
    assert verdict(ck.contains("42"), original, candidate).passed
    assert not verdict(ck.contains("43"), original, candidate).passed
    assert verdict(ck.equals("The total is  42."), original, candidate).passed
    assert verdict(ck.matches(r"total is\s+\d+"), original, candidate).passed
    assert verdict(ck.matches(r"^\d+$"), original, candidate) == Verdict(
        passed=False, reason="answer 'The total is 42.'"
    )
    with pytest.raises(ConfigError, match="a regular expression"):
        ck.matches("(")


def test_the_deltas_bound_the_increase_or_the_ratio() -> None:
    original = session("a", calls=(("add", "{}"),), tokens=(100, 20))
    candidate = session("a", calls=(("add", "{}"), ("add", "{}")), tokens=(120, 30))
    assert verdict(ck.token_delta(max_increase=30), original, candidate).passed
    assert verdict(ck.token_delta(max_ratio=1.2), original, candidate) == Verdict(
        passed=False, reason="120 → 150, more than 1.2x"
    )
    assert verdict(ck.tool_call_delta(max_increase=0), original, candidate) == Verdict(
        passed=False, reason="1 → 2, more than +0"
    )
    assert ck.token_delta(max_increase=500).name == "tokens ≤ +500"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="max_increase"):
        ck.token_delta()
    with pytest.raises(ConfigError, match="max_ratio"):
        ck.cost_delta(max_ratio=-1)


def test_cost_prices_both_sessions_with_the_candidates_budget_first() -> None:
    prices = {
        "old": Price(input_per_million=1, output_per_million=2),
        "new": Price(input_per_million=10, output_per_million=20),
    }
    original = session("a", model="old", tokens=(1000, 1000))
    candidate = session("a", model="new", tokens=(1000, 1000), budget=Budget(prices=prices))
    assert verdict(ck.cost_delta(max_increase=0.01), original, candidate) == Verdict(
        passed=False, reason="$0.003000 → $0.030000, more than +$0.010000"
    )
    assert verdict(ck.cost_delta(max_ratio=10), original, candidate).passed
    unpriced = session("a", model="new")
    assert verdict(ck.cost_delta(max_ratio=2), original, unpriced) == Verdict(
        passed=False, reason="no price for model 'old'"
    )


def test_any_return_of_a_check_becomes_a_verdict() -> None:
    one = session("a")

    async def judged_later(original: Session, candidate: Session) -> float:
        return 0.75

    def shouts(original: Session, candidate: Session) -> bool:
        raise RuntimeError("judge unreachable")

    given = {
        "yes": lambda a, b: True,
        "low score": lambda a, b: 0.25,
        "verdict": lambda a, b: Verdict(passed=True, score=0.1, reason="lenient"),
        "async": judged_later,
        "raises": shouts,
        "odd type": lambda a, b: "fine",
        "out of range": lambda a, b: 7.0,
        "nan": lambda a, b: float("nan"),
    }
    found = {name: verdict(check, one, one) for name, check in given.items()}
    assert found == {
        "yes": Verdict(passed=True),
        "low score": Verdict(passed=False, score=0.25),
        "verdict": Verdict(passed=True, score=0.1, reason="lenient"),
        "async": Verdict(passed=True, score=0.75),
        "raises": Verdict(passed=False, reason="the check raised RuntimeError: judge unreachable"),
        "odd type": Verdict(
            passed=False, reason="the check returned str, not a bool, a float or a Verdict"
        ),
        "out of range": Verdict(passed=False, reason="the check's score 7.0 is not in [0, 1]"),
        "nan": Verdict(passed=False, reason="the check's score nan is not in [0, 1]"),
    }
