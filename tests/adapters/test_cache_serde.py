"""The journal form of the prompt-cache fields: left out when unset, so older journals read
and replay byte for byte, and carried when set."""

from __future__ import annotations

from toolreel.adapters import structure, unstructure
from toolreel.adapters._serde import effect_data
from toolreel.core import CallModel, LoopConfig, ModelRequest, Usage
from toolreel.core.budget import Budget, Price

REQUEST = ModelRequest(model="m", system=None, messages=(), tools=())


def test_unset_cache_fields_write_what_they_wrote_before_caching_existed() -> None:
    assert unstructure(Usage(input_tokens=3, output_tokens=1)) == {
        "input_tokens": 3,
        "output_tokens": 1,
        "extra": [],
    }
    assert unstructure(Price(input_per_million=1, output_per_million=2)) == {
        "input_per_million": 1,
        "output_per_million": 2,
    }
    assert "cache_key" not in effect_data(CallModel(request=REQUEST, iteration=0))["request"]
    assert "cache_key" not in unstructure(LoopConfig(model="m"))


def test_set_cache_fields_round_trip() -> None:
    usage = Usage(input_tokens=125, output_tokens=5, cache_read_tokens=100, cache_write_tokens=20)
    assert structure(unstructure(usage), Usage) == usage
    price = Price(
        input_per_million=3,
        output_per_million=15,
        cache_read_per_million=0.3,
        cache_write_per_million=3.75,
    )
    config = LoopConfig(model="m", cache_key="s1", budget=Budget(prices={"m": price}))
    assert structure(unstructure(config), LoopConfig) == config
    keyed = ModelRequest(model="m", system=None, messages=(), tools=(), cache_key="s1")
    assert effect_data(CallModel(request=keyed, iteration=0))["request"]["cache_key"] == "s1"


def test_an_older_usage_without_cache_fields_reads_as_none_cached() -> None:
    old = {"input_tokens": 7, "output_tokens": 3, "extra": [["cache_read_input_tokens", 2]]}
    assert structure(old, Usage) == Usage(
        input_tokens=7, output_tokens=3, extra=(("cache_read_input_tokens", 2),)
    )
