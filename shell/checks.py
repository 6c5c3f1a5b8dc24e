"""Checks for `toolreel.shell.evaluate`, and what an evaluation reports.

    from toolreel.shell import evaluate, checks
    report = await evaluate("sessions.db", None, options, checks=[
        checks.same_outcome(), checks.contains("refund"), checks.token_delta(max_ratio=1.2),
    ])

A check is any `check(original, candidate)` over two `Session`s — the recorded
session and its rerun; two `AgentSession`s when an agent run is evaluated —
returning a bool, a float score in [0, 1] (it passes at 0.5 or more), a
`Verdict`, or an awaitable of one (a check may call a judge model). A check
that raises fails, with the exception as its reason; the evaluation goes on.
The built-in ones:

- `same_outcome()`: every turn ended as the original's did (completed, failed,
  max_iterations, ...), and as many turns did; an agent run ended as the
  original did (an output, or an error of the same code).
- `same_tools(arguments=False)`: the same tools were called as many times each
  (with `arguments=True`: with the same arguments, canonically).
- `same_answer()`: the final answer equals the original's (whitespace aside); an
  agent run's answer is its output as canonical JSON (keys sorted), so the same
  output in another key order is the same answer.
- `contains(text)`, `equals(text)`, `matches(pattern)`: the final answer (the
  last turn's text) contains the text, is it (whitespace at the ends aside), or
  has a match of the regular expression (`re.search`).
- `token_delta(...)`, `tool_call_delta(...)`, `cost_delta(...)`: the candidate
  spent at most `max_increase` more (tokens, tool calls, USD) than the original,
  or at most `max_ratio` times as much. Cost prices each session's model with
  the candidate's budget (the evaluation's options), then the session's own.

`EvalReport` (what `evaluate` returns) holds a `CaseResult` per session.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import attrs

from toolreel.adapters import canonical_arguments
from toolreel.core import ConfigError
from toolreel.core.record import Value

from ._eval import CaseResult, EvalReport
from ._verdict import (
    Check,
    Judged,
    SameOutcome,
    Verdict,
    answer,
    cost_of,
    finite,
    tool_calls,
    tool_names,
)


@attrs.frozen(repr=False, eq=False)
class _SameTools(Value):
    """The same tools called as many times each (with `arguments`: the same calls)."""

    arguments: bool = False
    name: str = attrs.field(
        default=attrs.Factory(
            lambda self: "same tool calls" if self.arguments else "same tools", takes_self=True
        )
    )

    def __call__(self, original: Judged, candidate: Judged) -> Verdict:
        """The calls one session made more often than the other, if any."""
        if self.arguments:
            before = self._calls(original)
            after = self._calls(candidate)
        else:
            before, after = tool_names(original), tool_names(candidate)
        added, removed = after - before, before - after
        if not added and not removed:
            return Verdict(passed=True, reason=", ".join(sorted(after)) or "no tool calls")
        parts = [f"{key} +{count}" for key, count in sorted(added.items())]
        parts += [f"{key} -{count}" for key, count in sorted(removed.items())]
        return Verdict(passed=False, reason=", ".join(parts))

    @staticmethod
    def _calls(session: Judged) -> Counter[str]:
        """Each call as `name(canonical arguments)`, counted."""
        return Counter(
            f"{call.name}({canonical_arguments(call.arguments)})" for call in tool_calls(session)
        )


def _short(text: str, limit: int = 60) -> str:
    """A text on one line, cut for a reason."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


@attrs.frozen(repr=False, eq=False)
class _Answer(Value):
    """The final answer tested by `test` (the expected text or pattern, for the name)."""

    name: str
    test: Callable[[str, str], bool]
    #: A failure's reason shows the original's answer too.
    against_original: bool = False

    def __call__(self, original: Judged, candidate: Judged) -> Verdict:
        """Whether the candidate's final answer passes; the answer, short, as the reason."""
        found, was = answer(candidate), answer(original)
        passed = self.test(found, was)
        reason = f"answer {_short(found)}"
        if not passed and self.against_original:
            reason += f", not {_short(was)}"
        return Verdict(passed=passed, reason=reason)


def same_outcome() -> Check:
    """Every turn ended as the original's did (completed, failed, ...), as many turns as it."""
    return SameOutcome()


def same_tools(*, arguments: bool = False) -> Check:
    """The same tools called as many times each; `arguments`: with the same arguments too."""
    return _SameTools(arguments)


def same_answer() -> Check:
    """The final answer is the original's (runs of whitespace count as one space)."""
    return _Answer("same answer", lambda found, was: found.split() == was.split(), True)


def contains(text: str) -> Check:
    """The final answer contains `text`."""
    return _Answer(f"contains {_short(text, 30)}", lambda found, _: text in found)


def equals(text: str) -> Check:
    """The final answer is `text` (whitespace at either end aside)."""
    return _Answer(f"equals {_short(text, 30)}", lambda found, _: found.strip() == text.strip())


def matches(pattern: str) -> Check:
    """The final answer has a match of the regular expression `pattern` (`re.search`)."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ConfigError("pattern", pattern, f"a regular expression ({exc})") from exc
    return _Answer(
        f"matches {_short(pattern, 30)}", lambda found, _: compiled.search(found) is not None
    )


@attrs.frozen(repr=False, eq=False)
class _Delta(Value):
    """Whether the candidate's `measure` stays within a bound of the original's."""

    name: str
    measure: Callable[[Judged, Judged], tuple[float | None, float | None]]
    unit: str
    max_increase: float | None
    max_ratio: float | None

    def __call__(self, original: Judged, candidate: Judged) -> Verdict:
        """The two measures and whether the candidate's stays within the bound."""
        before, after = self.measure(original, candidate)
        if before is None or after is None:
            model = (original if before is None else candidate).config.model
            return Verdict(passed=False, reason=f"no price for model {model!r}")
        change = f"{_amount(before, self.unit)} → {_amount(after, self.unit)}"
        if self.max_increase is not None and after - before > self.max_increase:
            bound = f"+{_amount(self.max_increase, self.unit)}"
            return Verdict(passed=False, reason=f"{change}, more than {bound}")
        if self.max_ratio is not None and after > before * self.max_ratio:
            return Verdict(passed=False, reason=f"{change}, more than {self.max_ratio:g}x")
        return Verdict(passed=True, reason=change)


def _amount(value: float, unit: str) -> str:
    """A measure as text: USD to 6 places, counts whole."""
    return f"${value:.6f}" if unit == "USD" else f"{value:g}"


def _bounds(
    what: str, max_increase: float | None, max_ratio: float | None
) -> tuple[float | None, float | None]:
    """The bounds, checked: at least one, each a real number, a ratio not negative."""
    if max_increase is None and max_ratio is None:
        raise ConfigError(what, None, "max_increase=..., max_ratio=... or both")
    for field, value in (("max_increase", max_increase), ("max_ratio", max_ratio)):
        if value is not None and (isinstance(value, bool) or not finite(float(value))):
            raise ConfigError(field, value, "a number")
    if max_ratio is not None and max_ratio < 0:
        raise ConfigError("max_ratio", max_ratio, "a ratio ≥ 0 (1.2: at most 20% more)")
    return max_increase, max_ratio


def token_delta(*, max_increase: float | None = None, max_ratio: float | None = None) -> Check:
    """At most `max_increase` more tokens (in + out) than the original, or `max_ratio` times."""
    bounds = _bounds("token_delta", max_increase, max_ratio)
    return _Delta(
        _bound_name("tokens", *bounds, ""),
        lambda a, b: (a.usage.total_tokens, b.usage.total_tokens),
        "",
        *bounds,
    )


def tool_call_delta(*, max_increase: float | None = None, max_ratio: float | None = None) -> Check:
    """At most `max_increase` more tool calls than the original, or `max_ratio` times as many."""
    bounds = _bounds("tool_call_delta", max_increase, max_ratio)
    return _Delta(
        _bound_name("tool calls", *bounds, ""),
        lambda a, b: (len(tool_calls(a)), len(tool_calls(b))),
        "",
        *bounds,
    )


def cost_delta(*, max_increase: float | None = None, max_ratio: float | None = None) -> Check:
    """At most `max_increase` USD more than the original, or `max_ratio` times its cost.

    Each session's model is priced by the candidate's budget (the evaluation's
    options), then by the session's own; a session left unpriced fails the check.
    """
    bounds = _bounds("cost_delta", max_increase, max_ratio)
    return _Delta(
        _bound_name("cost", *bounds, "USD"),
        lambda a, b: (cost_of(a, b.config.budget), cost_of(b)),
        "USD",
        *bounds,
    )


def _bound_name(what: str, increase: float | None, ratio: float | None, unit: str) -> str:
    """A delta check's name: "tokens ≤ +500", "cost ≤ 1.2x"."""
    bounds = [f"+{_amount(increase, unit)}"] if increase is not None else []
    bounds += [f"{ratio:g}x"] if ratio is not None else []
    return f"{what} ≤ {', '.join(bounds)}"


__all__ = [
    "CaseResult",
    "Check",
    "EvalReport",
    "Verdict",
    "contains",
    "cost_delta",
    "equals",
    "matches",
    "same_answer",
    "same_outcome",
    "same_tools",
    "token_delta",
    "tool_call_delta",
]
