"""Known prices: a model's `Price` from the `genai-prices` table, for budgets given none.

pydantic's `genai-prices` package (the `toolreel[prices]` extra) keeps a maintained
table of what each provider's models cost, cache reads and writes included. It is
imported only when a cost is needed — a `Budget` without a hand-written price for the
session's model, or `toolreel show` / `sessions` printing a cost — since importing it
(with pydantic) takes a few hundred milliseconds. The lookup happens here, in the
shell, once per model; the core gets the result as data (`Budget.prices`), journaled
with the session's config, so a replay costs every call the same however the table
changes later.

The table's rates are read as flat rates per million tokens (`Price`); a tier a
provider charges past a context size (Anthropic, Gemini past 200k tokens) is not used.
"""

from __future__ import annotations

import functools
from typing import Any

from toolreel.core import ConfigError, LoopConfig, Usage
from toolreel.core.budget import Budget, Price

#: genai-prices' provider id for each toolreel provider it prices ("ollama": none, a local model).
PROVIDER_IDS = {
    "openai": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
}

#: What each probe counts, to read one rate: tokens of the kind, per thousand.
_PROBE = 1000
_INSTALL = (
    "install toolreel[prices] (the genai-prices table) or give Budget(prices={model: Price(...)})"
)


@functools.cache
def _table() -> Any:
    """genai-prices' `calc_price` and `Usage`, or None when the package is not installed."""
    try:
        import genai_prices  # noqa: PLC0415 - a few hundred ms: only when a cost is needed
    except ImportError:
        return None
    return genai_prices


def available() -> bool:
    """Whether the genai-prices table can be read."""
    return _table() is not None


@functools.cache
def known_price(
    model: str, provider: str | None = None, base_url: str | None = None
) -> Price | None:
    """The table's price of `model` (None: not installed, or no price known for it).

    `provider` is a toolreel provider name, `base_url` the server it is reached at. The
    table is asked for the server by its URL first, then for the model among the
    provider's own (a gateway or proxy in front of OpenAI bills OpenAI's prices; a local
    server's model is not one of them, so it has none). Neither given: the model by its
    name alone, wherever the table finds it (`toolreel show` knows only the model).
    """
    table = _table()
    if table is None or not model:
        return None
    places: list[dict[str, str]] = []
    if base_url is not None:
        places.append({"provider_api_url": base_url})
    if provider in PROVIDER_IDS:
        places.append({"provider_id": PROVIDER_IDS[provider]})
    elif provider is None and base_url is None:
        places.append({})
    for where in places:
        price = _read(table, model, where)
        if price is not None:
            return price
    return None


def _read(table: Any, model: str, where: dict[str, str]) -> Price | None:
    """The rates of `model` at the provider `where` names (None: the table lacks either)."""

    def rate(**counts: int) -> float:
        """USD per million tokens of the kind `counts` probes (the input it holds included)."""
        found = table.calc_price(table.Usage(**counts), model_ref=model, **where)
        return float(found.total_price * (1_000_000 // _PROBE))

    try:
        return Price(
            input_per_million=rate(input_tokens=_PROBE),
            output_per_million=rate(output_tokens=_PROBE),
            cache_read_per_million=rate(input_tokens=_PROBE, cache_read_tokens=_PROBE),
            cache_write_per_million=rate(input_tokens=_PROBE, cache_write_tokens=_PROBE),
        )
    except LookupError:  # genai-prices: no such provider, or no such model at it
        return None


def priced(
    budget: Budget | None, model: str, provider: str | None = None, base_url: str | None = None
) -> Budget | None:
    """`budget` with the table's price for `model` when none was given by hand.

    A budget with `max_cost` and no price anywhere: `ConfigError` saying why (the table
    is not installed, or does not know the model). Without `max_cost` a missing price
    only leaves the cost at 0.
    """
    if budget is None or budget.price(model) is not None:
        return budget
    if budget.max_cost is None and not available():
        return budget
    price = known_price(model, provider, base_url)
    if price is not None:
        return budget.with_price(model, price)
    if budget.max_cost is not None:
        raise ConfigError("max_cost", budget.max_cost, _why_unpriced(model, provider, base_url))
    return budget


def _why_unpriced(model: str, provider: str | None, base_url: str | None) -> str:
    """What a cost limit lacks for `model`, and the two ways to give it."""
    if not available():
        return f"a Price for the model {model!r}: {_INSTALL}"
    at = f"at {base_url} nor for provider {provider!r}" if base_url else f"for {provider!r}"
    return (
        f"a Price for the model {model!r}: its price is unknown (the genai-prices table has "
        f"none {at}); give Budget(prices={{model: Price(...)}})"
    )


def session_price(config: LoopConfig) -> Price | None:
    """The price a stored session's calls cost: its budget's (journaled), else the table's.

    The journal keeps the model's name, not its provider or server, so the table is asked
    for the model by its name alone (None: the table lacks it, or is not installed).
    """
    budget = config.budget
    price = None if budget is None else budget.price(config.model)
    return price if price is not None else known_price(config.model)


def cost_of(usage: Usage, config: LoopConfig) -> float | None:
    """What `usage` of a stored session cost (`session_price`); None: no price known."""
    price = session_price(config)
    return None if price is None else price.cost(usage)


def dollars(amount: float) -> str:
    """A cost as `toolreel sessions` shows it: "$0.0123", "$1.50" (as transcripts do)."""
    return f"${amount:.2f}" if amount >= 1 else f"${amount:.4g}"
