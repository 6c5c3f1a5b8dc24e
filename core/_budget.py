"""Budgets: limits on what a turn (or a session) may spend, and the rules that enforce them.

Theory of operation
-------------------
`LoopConfig.budget` holds a `Budget`; without one nothing here runs. What was
spent is a `Spending` (tokens, model calls, tool calls by name, cost), kept
for the running turn (`Turn.spent`) and for the session (`State.spent`); the
budget's `scope` says which of the two its limits apply to. The reducer asks
at three points (core/_step.py rule 16):

1.  Before each model call (`before_call`): the call is not made once a
    limit is used up: model calls made >= `max_model_calls`, or tokens or cost
    already at (or past) their limit. So a limit of 0 ends the turn before
    its first model call.
2.  After each model response (`after_response`): tokens and cost are
    over when they *exceed* their limit (the response that crossed it is the
    one allowed overrun: what it cost is known only once it came back).
3.  Before tools run (`admit`): the runnable calls of a round are taken in
    call order; a call that would take tool calls in total past
    `max_tool_calls`, or its own tool's count past `max_calls_per_tool`, is not
    run and gets an error result naming the budget. So a limit of 0 refuses
    every call.

Once over, the turn ends with the outcome `OverBudget(limit_name, limit, used)`
after the round in flight is complete (every call answered), or, under
`on_exceeded=FINAL_ANSWER`, after one last model call offered no tools (not
made when it is model calls that ran out, nor before the turn's first call).

What is counted: `Usage.input_tokens` and `output_tokens` (cached input is
inside the input count for every provider, Anthropic's cache reads and writes
summed into it by its codec; reasoning output is inside the output count); a
model call is a response that came back (a failed attempt that is retried
is not one); a tool call is a call dispatched to run (or, in manual mode,
requested from the caller); refused, unknown or blocked calls are not. Cost
is `Price.cost(usage)` with the `Price` of the session's model: uncached input,
cache reads, cache writes and output, each at its rate per million tokens (a
cache rate left None is the input rate). Flat rates: an estimate where a
provider charges more past a context size (genai-prices' tiers are not used).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ._errors import ConfigError
from ._record import Value
from ._records import NO_USAGE, ToolCall, Usage

#: The limits a `Budget` may set, by the name an `OverBudget` reports.
TOKEN_LIMITS = ("input_tokens", "output_tokens", "total_tokens")


class BudgetScope(enum.Enum):
    """What a budget's limits count."""

    #: Each turn (each prompt) starts from nothing (pydantic-ai's `UsageLimits` per run).
    TURN = "turn"
    #: Everything the session spent, every turn so far included.
    SESSION = "session"


class BudgetPolicy(enum.Enum):
    """What happens when a budget is used up."""

    #: The turn ends `OverBudget` once the round in flight is answered.
    STOP = "stop"
    #: One last model call with no tools asks for an answer, then the turn ends
    #: `OverBudget` with that answer as its text.
    FINAL_ANSWER = "final_answer"


def _count_or_none(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: None or an int >= 0 (0 allows nothing of that kind)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(attribute.name, value, "None or an int >= 0")


def _amount(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: a number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ConfigError(attribute.name, value, "a number >= 0")


def _amount_or_none(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: None or a number >= 0."""
    if value is not None:
        _amount(instance, attribute, value)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Price(Value):
    """What a model costs, in USD per million tokens: input, output, and cached input.

    `cache_read_per_million` prices the input tokens read from the prompt cache,
    `cache_write_per_million` those written to it; None: they cost what input does.
    """

    input_per_million: float = attrs.field(validator=_amount)
    output_per_million: float = attrs.field(validator=_amount)
    cache_read_per_million: float | None = attrs.field(default=None, validator=_amount_or_none)
    cache_write_per_million: float | None = attrs.field(default=None, validator=_amount_or_none)

    def cost(self, usage: Usage) -> float:
        """What `usage` costs at this price (cached input at its own rates, when given)."""
        read, written = usage.cache_read_tokens, usage.cache_write_tokens
        uncached = max(usage.input_tokens - read - written, 0)
        read_rate = self.input_per_million
        if self.cache_read_per_million is not None:
            read_rate = self.cache_read_per_million
        write_rate = self.input_per_million
        if self.cache_write_per_million is not None:
            write_rate = self.cache_write_per_million
        return (
            uncached * self.input_per_million
            + read * read_rate
            + written * write_rate
            + usage.output_tokens * self.output_per_million
        ) / 1_000_000


def per_tool(value: Mapping[str, int] | Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    """Per-tool limits as sorted (name, limit) pairs, from a mapping or pairs; checked."""
    pairs = tuple(value.items() if isinstance(value, Mapping) else value)
    for pair in pairs:
        name, limit = pair
        if not isinstance(name, str) or not name:
            raise ConfigError("max_calls_per_tool", name, "tool names (non-empty str)")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ConfigError(f"max_calls_per_tool[{name!r}]", limit, "an int >= 0")
    return tuple(sorted((name, limit) for name, limit in pairs))


def prices(
    value: Mapping[str, Price] | Iterable[tuple[str, Price]],
) -> tuple[tuple[str, Price], ...]:
    """Prices as sorted (model, Price) pairs, from a mapping or pairs; checked."""
    pairs = tuple(value.items() if isinstance(value, Mapping) else value)
    for model, price in pairs:
        if not isinstance(price, Price):
            raise ConfigError(f"prices[{model!r}]", price, "a Price(input_per_million=...)")
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Budget(Value):
    """Limits on one turn's (or, `scope=SESSION`, the session's) spending; None: no limit.

    `max_calls_per_tool` maps tool names to their own limit (each must be a
    configured tool: checked by `LoopConfig`). `max_cost` (USD) needs the
    session model's `Price` in `prices` (checked by `LoopConfig`): given by
    hand, or, left out, filled in by the shell from the `genai-prices` table
    (`toolreel[prices]`) before the session starts. Prices without `max_cost`
    only report the cost. A budget with no limits reports what is spent
    (`UsageReported`) and stops nothing.
    """

    max_input_tokens: int | None = attrs.field(default=None, validator=_count_or_none)
    max_output_tokens: int | None = attrs.field(default=None, validator=_count_or_none)
    max_total_tokens: int | None = attrs.field(default=None, validator=_count_or_none)
    max_tool_calls: int | None = attrs.field(default=None, validator=_count_or_none)
    max_calls_per_tool: tuple[tuple[str, int], ...] = attrs.field(default=(), converter=per_tool)
    max_model_calls: int | None = attrs.field(default=None, validator=_count_or_none)
    max_cost: float | None = attrs.field(default=None, validator=_amount_or_none)
    prices: tuple[tuple[str, Price], ...] = attrs.field(default=(), converter=prices)
    scope: BudgetScope = attrs.field(default=BudgetScope.TURN, converter=BudgetScope)
    on_exceeded: BudgetPolicy = attrs.field(default=BudgetPolicy.STOP, converter=BudgetPolicy)

    def price(self, model: str) -> Price | None:
        """The price of `model`, if one was given."""
        return dict(self.prices).get(model)

    def check_config(self, model: str, tools: frozenset[str]) -> None:
        """Refuse limits the session cannot apply: an unknown tool, a cost with no price."""
        for name, _ in self.max_calls_per_tool:
            if name not in tools:
                known = ", ".join(sorted(tools)) or "none"
                raise ConfigError(
                    "max_calls_per_tool", name, f"a configured tool's name (tools: {known})"
                )
        self.check_price(model)

    def check_price(self, model: str) -> None:
        """Refuse a cost limit without a price for `model`, the model the session uses."""
        if self.max_cost is not None and self.price(model) is None:
            given = ", ".join(name for name, _ in self.prices) or "no model"
            raise ConfigError(
                "max_cost",
                self.max_cost,
                f"a Price for the model {model!r} (prices given for: {given}; "
                "none is known for it: give Budget(prices={model: Price(...)}))",
            )

    def with_price(self, model: str, price: Price) -> Budget:
        """This budget with `price` for `model` (a price given by hand for it stays)."""
        if self.price(model) is not None:
            return self
        return attrs.evolve(self, prices=(*self.prices, (model, price)))


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Spending(Value):
    """What was spent: token usage, model calls, tool calls by tool name, cost (USD)."""

    usage: Usage = NO_USAGE
    model_calls: int = 0
    tool_calls: tuple[tuple[str, int], ...] = ()
    cost: float = 0.0

    @property
    def total_tool_calls(self) -> int:
        """Tool calls of every tool."""
        return sum(count for _, count in self.tool_calls)

    def calls_of(self, name: str) -> int:
        """Calls of the tool `name`."""
        return dict(self.tool_calls).get(name, 0)


NOTHING_SPENT = Spending()


def _as_float(value: float) -> float:
    """A count or an amount as a float (a function, not `float`: attrs reads a
    converter's signature, and a builtin's costs a tokenizer at import)."""
    return float(value)


def _number(value: float) -> str:
    """A count or an amount as text: 3, not 3.0; 1000000, not 1e+06; costs to 6 places."""
    return str(int(value)) if float(value).is_integer() else f"{value:.6f}".rstrip("0")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class OverBudget(Value):
    """The budget ran out: the limit (`limit_name`, its value) and what was `used` of it.

    For tool calls `used` counts the calls the model asked for (run and
    refused). `text` is the answer when the model gave one (a response past
    the limit that called no tools, or FINAL_ANSWER's last call), else None.
    """

    limit_name: str
    limit: float = attrs.field(converter=_as_float)
    used: float = attrs.field(converter=_as_float)
    scope: BudgetScope = BudgetScope.TURN
    text: str | None = None
    model_finish_reason: str | None = None

    @property
    def message(self) -> str:
        """The budget, the limit and the amount used, in one line."""
        return (
            f"over budget: {self.limit_name} limit {_number(self.limit)} per {self.scope.value}, "
            f"used {_number(self.used)}"
        )


def spent_response(spending: Spending, usage: Usage, price: Price | None) -> Spending:
    """`spending` after one model response with `usage`."""
    cost = spending.cost + (price.cost(usage) if price is not None else 0.0)
    return Spending(  # built whole, not evolved: once per model response
        usage=spending.usage + usage,
        model_calls=spending.model_calls + 1,
        tool_calls=spending.tool_calls,
        cost=cost,
    )


def spent_tools(spending: Spending, calls: Iterable[ToolCall]) -> Spending:
    """`spending` after `calls` were dispatched."""
    counts = dict(spending.tool_calls)
    for call in calls:
        counts[call.name] = counts.get(call.name, 0) + 1
    return attrs.evolve(spending, tool_calls=tuple(sorted(counts.items())))


def _token_counts(usage: Usage) -> tuple[int, int, int]:
    """Input, output and total tokens, in `TOKEN_LIMITS` order."""
    return usage.input_tokens, usage.output_tokens, usage.total_tokens


def _tokens_and_cost(budget: Budget, spending: Spending, *, at_limit: bool) -> OverBudget | None:
    """The first token or cost limit past (or, `at_limit`, at or past) its value."""
    limits = (budget.max_input_tokens, budget.max_output_tokens, budget.max_total_tokens)
    counted = (*zip(TOKEN_LIMITS, limits, _token_counts(spending.usage), strict=True),)
    for name, limit, used in (*counted, ("cost_usd", budget.max_cost, spending.cost)):
        if limit is not None and (used > limit or (at_limit and used >= limit)):
            return OverBudget(limit_name=name, limit=limit, used=used, scope=budget.scope)
    return None


def before_call(budget: Budget, spending: Spending, *, final: bool) -> OverBudget | None:
    """Rule 1: the limit that forbids the next model call, if one does.

    A FINAL_ANSWER call is stopped only by the model-call limit.
    """
    limit = budget.max_model_calls
    if limit is not None and spending.model_calls >= limit:
        return OverBudget(
            limit_name="model_calls", limit=limit, used=spending.model_calls, scope=budget.scope
        )
    return None if final else _tokens_and_cost(budget, spending, at_limit=True)


def after_response(budget: Budget, spending: Spending) -> OverBudget | None:
    """Rule 2: the token or cost limit the responses so far went past, if any."""
    return _tokens_and_cost(budget, spending, at_limit=False)


def admit(
    budget: Budget, spending: Spending, calls: tuple[ToolCall, ...]
) -> tuple[OverBudget | None, ...]:
    """Rule 3: for each of `calls` (in call order), None if it may run, else the limit it hits."""
    counts = dict(spending.tool_calls)
    total = spending.total_tool_calls
    limits = dict(budget.max_calls_per_tool)
    verdicts: list[OverBudget | None] = []
    for call in calls:
        own = limits.get(call.name)
        mine = counts.get(call.name, 0)
        if budget.max_tool_calls is not None and total + 1 > budget.max_tool_calls:
            verdicts.append(_refused("tool_calls", budget.max_tool_calls, budget, spending, calls))
        elif own is not None and mine + 1 > own:
            verdicts.append(_refused(f"tool_calls[{call.name}]", own, budget, spending, calls))
        else:
            counts[call.name] = mine + 1
            total += 1
            verdicts.append(None)
    return tuple(verdicts)


def _refused(
    name: str, limit: int, budget: Budget, spending: Spending, calls: tuple[ToolCall, ...]
) -> OverBudget:
    """The outcome of a refused call: `used` counts every call asked for (run or refused)."""
    if name == "tool_calls":
        used = spending.total_tool_calls + len(calls)
    else:
        tool = name[len("tool_calls[") : -1]
        used = spending.calls_of(tool) + sum(1 for call in calls if call.name == tool)
    return OverBudget(limit_name=name, limit=limit, used=used, scope=budget.scope)


def refusal_text(over: OverBudget) -> str:
    """The error result a call the budget refused gets: the model reads why."""
    return f"not run: {over.message}"
