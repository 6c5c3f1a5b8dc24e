"""What differs between two sessions — a fork or a rerun and its original — as a person reads it.

`diff_sessions(a, b)` (two `Session`s, or two ids and their `journal`) gives a
`SessionDiff`: where the sessions part (with a journal: the first step whose
event or effects differ, and its turn), then turn by turn what differs — the
prompt, the answer (a unified diff), the tool calls (added, removed, changed
arguments or results), the outcome, the usage — and the totals (tokens, and
cost where the session's budget prices its model). Its `text` reads as
`RequestDiff`'s does; `data()` is the same as JSON-ready data (`toolreel diff
--json`).

Tool calls of a turn are matched in order: first a call of the same name and
arguments (canonically), then one of the same name (its arguments changed);
the rest were added or removed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from toolreel.core import ChatMessage, ToolCall, ToolResult, Usage
from toolreel.core.outcomes import FinishReason
from toolreel.core.record import Value

from ._fold import fold_journal
from ._journal import Journal, JournalEntry
from ._request_diff import ChangeKind, _pretty, _unified
from ._session import (
    AgentSession,
    AgentSessionBuilder,
    Session,
    TurnSummary,
    load_session,
    summarize,
)


def canonical_arguments(arguments: str) -> str:
    """Arguments as canonical JSON (sorted keys, no spaces); not JSON: as sent."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CallChange(Value):
    """A tool call one session made and the other did not, or made otherwise.

    `a`/`b` are the arguments (for "changed": `field` says whether the arguments
    or the result changed, and `a`/`b` hold those); None where absent.
    """

    kind: ChangeKind
    name: str
    field: str = "arguments"
    a: str | None = None
    b: str | None = None

    def lines(self) -> list[str]:
        """The change as text: a heading, then the call's arguments or the diff."""
        if self.kind != "changed":
            text = _pretty((self.b if self.kind == "added" else self.a) or "")
            sign = "+" if self.kind == "added" else "-"
            return [f"{self.name} {self.kind}:", *(f"  {sign} {line}" for line in _split(text))]
        diff = _unified(_pretty(self.a or ""), _pretty(self.b or ""))
        return [f"{self.name} {self.field} changed:", *(f"  {line}" for line in diff)]

    def data(self) -> dict[str, Any]:
        """The change as JSON-ready data."""
        return attrs.asdict(self)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TurnDiff(Value):
    """Turn `turn` (1-based) of both sessions; a side's prompt None: it has no such turn."""

    turn: int
    prompt_a: str | None
    prompt_b: str | None
    answer_a: str = ""
    answer_b: str = ""
    calls: tuple[CallChange, ...] = ()
    outcome_a: FinishReason | None = None
    outcome_b: FinishReason | None = None
    usage_a: Usage = attrs.Factory(Usage)
    usage_b: Usage = attrs.Factory(Usage)

    @property
    def same(self) -> bool:
        """Whether the turn went the same way in both (usage aside)."""
        return (
            self.prompt_a == self.prompt_b
            and self.answer_a == self.answer_b
            and not self.calls
            and self.outcome_a == self.outcome_b
        )

    def lines(self) -> list[str]:
        """The turn's differences as text (usage on one line)."""
        if self.prompt_a is None or self.prompt_b is None:
            side, prompt = ("+", self.prompt_b) if self.prompt_a is None else ("-", self.prompt_a)
            return [f"turn {self.turn} only in {side}: {prompt!r}"]
        lines = [f"turn {self.turn}: {self.prompt_b!r}"]
        if self.prompt_a != self.prompt_b:
            lines += [
                "  prompt:",
                *(f"    {line}" for line in _unified(self.prompt_a, self.prompt_b)),
            ]
        if self.answer_a != self.answer_b:
            diff = _unified(self.answer_a, self.answer_b)
            lines += ["  answer:", *(f"    {line}" for line in diff)]
        if self.calls:
            lines += ["  tool calls:"]
            for change in self.calls:
                lines += [f"    {line}" for line in change.lines()]
        if self.outcome_a != self.outcome_b:
            lines += [f"  outcome: {_reason(self.outcome_a)} → {_reason(self.outcome_b)}"]
        if self.usage_a != self.usage_b:
            lines += [f"  usage: {_usage(self.usage_a)} → {_usage(self.usage_b)}"]
        if len(lines) == 1:
            lines[0] += " (the same)"
        return lines

    def data(self) -> dict[str, Any]:
        """The turn as JSON-ready data."""
        return {
            "turn": self.turn,
            "same": self.same,
            "prompt": [self.prompt_a, self.prompt_b],
            "answer": [self.answer_a, self.answer_b],
            "answer_diff": _unified(self.answer_a, self.answer_b)
            if self.answer_a != self.answer_b
            else [],
            "calls": [change.data() for change in self.calls],
            "outcome": [_reason(self.outcome_a), _reason(self.outcome_b)],
            "usage": [_usage_data(self.usage_a), _usage_data(self.usage_b)],
        }


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SessionDiff(Value):
    """Two sessions compared: where they part, each turn, the totals; its `str` is the text.

    `parted_at` is the first step (seq) whose event or effects differ (None:
    compared without their journal, or no step differs), `parted_turn` the first
    turn that differs (None: none does). `cost` is each session's cost in USD,
    None where its budget has no price for its model.
    """

    a: str
    b: str
    parted_at: int | None
    parted_turn: int | None
    turns: tuple[TurnDiff, ...]
    usage: tuple[Usage, Usage]
    cost: tuple[float | None, float | None] = (None, None)

    @property
    def text(self) -> str:
        """Where they part, a legend line, each differing turn, the totals."""
        if not self:
            return f"sessions {self.a} and {self.b} do not differ"
        where = [f"step {self.parted_at}"] if self.parted_at is not None else []
        where += [f"turn {self.parted_turn}"] if self.parted_turn is not None else []
        lines = [f"sessions {self.a} and {self.b} part at {', '.join(where) or 'no turn'}"]
        lines += [f"(- {self.a}, + {self.b})"]
        for turn in self.turns:
            if not turn.same:
                lines += turn.lines()
        lines += [f"total usage: {_usage(self.usage[0])} → {_usage(self.usage[1])}"]
        if self.cost != (None, None):
            lines += [f"total cost: {_cost(self.cost[0])} → {_cost(self.cost[1])}"]
        return "\n".join(lines)

    def data(self) -> dict[str, Any]:
        """The diff as JSON-ready data (`toolreel diff --json`)."""
        return {
            "a": self.a,
            "b": self.b,
            "differ": bool(self),
            "parted_at": self.parted_at,
            "parted_turn": self.parted_turn,
            "turns": [turn.data() for turn in self.turns],
            "usage": [_usage_data(self.usage[0]), _usage_data(self.usage[1])],
            "cost": list(self.cost),
        }

    def __str__(self) -> str:
        """The text."""
        return self.text

    def __bool__(self) -> bool:
        """Whether the sessions differ (in a step, or in a turn)."""
        return self.parted_at is not None or self.parted_turn is not None


def diff_sessions(
    a: Session | AgentSession | str,
    b: Session | AgentSession | str,
    *,
    journal: Journal | None = None,
) -> SessionDiff:
    """Compare two sessions: `Session`s (or `AgentSession`s: one turn, the output its answer),
    or ids of sessions of `journal` (then also step by step).

    Raises:
        ValueError: An id without a journal.
    """
    if journal is None and (isinstance(a, str) or isinstance(b, str)):
        raise ValueError("diff_sessions: session ids need the journal that holds them")
    parted_at = None
    if journal is not None:
        if isinstance(a, str) and isinstance(b, str):
            parted_at = first_difference(journal.entries(a), journal.entries(b))
        a = _load(journal, a) if isinstance(a, str) else a
        b = _load(journal, b) if isinstance(b, str) else b
    assert not isinstance(a, str) and not isinstance(b, str)
    left, right = _summaries(a), _summaries(b)
    count = max(len(left), len(right))
    turns = tuple(
        _turn(number + 1, _at(left, number), _at(right, number)) for number in range(count)
    )
    parted_turn = next((turn.turn for turn in turns if not turn.same), None)
    return SessionDiff(
        a=a.session_id,
        b=b.session_id,
        parted_at=parted_at,
        parted_turn=parted_turn,
        turns=turns,
        usage=(a.usage, b.usage),
        cost=(_cost_of(a), _cost_of(b)),
    )


def first_difference(a: Iterable[JournalEntry], b: Iterable[JournalEntry]) -> int | None:
    """The seq of the first step whose event or effects differ (one side ending first: the
    step after its last); None when both hold the same steps."""
    seq = 0
    left, right = iter(a), iter(b)
    while True:
        one, other = next(left, None), next(right, None)
        if one is None and other is None:
            return None
        seq += 1
        if one is None or other is None or one.event != other.event or one.effects != other.effects:
            return seq


def _load(journal: Journal, session_id: str) -> Session | AgentSession:
    """A session of the journal: a chat's, or an agent run's (folded without comparing)."""
    if not journal.config(session_id).structured:
        return load_session(journal, session_id)
    fold = fold_journal(journal, session_id)
    builder = AgentSessionBuilder(session_id)
    for entry, effects in fold:
        builder.see(effects, entry.event)
    return builder.session(fold.state)


def _summaries(session: Session | AgentSession) -> tuple[TurnSummary, ...]:
    """A chat's turns; an agent run as one turn, its output (as JSON) the answer."""
    if isinstance(session, Session):
        return session.turns
    prompt = next((m.content for m in session.history if m.role == "user"), "")
    finish = session.finish
    if finish is None:
        return (TurnSummary(prompt=prompt, usage=session.usage),)
    answer = ChatMessage(role="assistant", content=finish.text, tool_rounds=finish.rounds)
    return (summarize(finish, prompt, answer),)


def _at(turns: Sequence[TurnSummary], index: int) -> TurnSummary | None:
    """The turn at `index`, if the session has it."""
    return turns[index] if index < len(turns) else None


def _turn(number: int, a: TurnSummary | None, b: TurnSummary | None) -> TurnDiff:
    """One turn of both sessions compared."""
    return TurnDiff(
        turn=number,
        prompt_a=a.prompt if a else None,
        prompt_b=b.prompt if b else None,
        answer_a=a.text if a else "",
        answer_b=b.text if b else "",
        calls=tuple(diff_calls(_calls(a), _calls(b))) if a and b else (),
        outcome_a=a.reason if a else None,
        outcome_b=b.reason if b else None,
        usage_a=a.usage if a else Usage(),
        usage_b=b.usage if b else Usage(),
    )


Run = tuple[ToolCall, ToolResult | None]


def _calls(turn: TurnSummary | None) -> list[Run]:
    """A turn's tool calls with their results, in order."""
    if turn is None or turn.answer is None:
        return []
    runs: list[Run] = []
    for round_ in turn.answer.tool_rounds:
        results = {result.call_id: result for result in round_.results}
        runs += [(call, results.get(call.id)) for call in round_.tool_calls]
    return runs


def diff_calls(a: list[Run], b: list[Run]) -> list[CallChange]:
    """The calls of two turns matched in order: same call (its result compared), same name
    (arguments changed), or added / removed."""
    left = list(a)
    changes: list[CallChange] = []
    unmatched: list[Run] = []
    for call, result in b:
        found = next(
            (
                item
                for item in left
                if item[0].name == call.name
                and canonical_arguments(item[0].arguments) == canonical_arguments(call.arguments)
            ),
            None,
        )
        if found is None:
            unmatched.append((call, result))
            continue
        left.remove(found)
        old, new = _result(found[1]), _result(result)
        if old != new:
            changes.append(CallChange(kind="changed", name=call.name, field="result", a=old, b=new))
    for call, _ in unmatched:
        same_name = next((item for item in left if item[0].name == call.name), None)
        if same_name is None:
            changes.append(CallChange(kind="added", name=call.name, b=call.arguments))
            continue
        left.remove(same_name)
        changes.append(
            CallChange(kind="changed", name=call.name, a=same_name[0].arguments, b=call.arguments)
        )
    changes += [CallChange(kind="removed", name=call.name, a=call.arguments) for call, _ in left]
    return changes


def _result(result: ToolResult | None) -> str:
    """A result as compared: its text (an error's marked)."""
    if result is None:
        return ""
    return f"error: {result.content}" if result.is_error else result.content


def _cost_of(session: Session | AgentSession) -> float | None:
    """What the session cost, where its budget prices its model."""
    budget = session.config.budget
    price = budget.price(session.config.model) if budget is not None else None
    return price.cost(session.usage) if price is not None else None


def _reason(reason: FinishReason | None) -> str:
    """A turn's outcome in words."""
    return reason.value if reason is not None else "unfinished"


def _usage(usage: Usage) -> str:
    """Usage in one phrase."""
    return f"{usage.total_tokens} tokens ({usage.input_tokens} in, {usage.output_tokens} out)"


def _usage_data(usage: Usage) -> dict[str, int]:
    """Usage as JSON-ready data."""
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def _cost(cost: float | None) -> str:
    """A cost in USD, or that it is unknown."""
    return "unpriced" if cost is None else f"${cost:.6f}"


def _split(text: str) -> list[str]:
    """Text as lines (one empty line for empty text)."""
    return text.splitlines() or [""]
