"""The web streams' usage JSON: the prompt-cache counters only when the cache was used."""

from __future__ import annotations

from toolreel.core import Usage
from toolreel.web._event_stream import usage_json


def test_usage_json_adds_the_cache_counters_only_when_nonzero() -> None:
    assert usage_json(Usage(input_tokens=30, output_tokens=12)) == {
        "input_tokens": 30,
        "output_tokens": 12,
    }
    cached = Usage(input_tokens=125, output_tokens=5, cache_read_tokens=100, cache_write_tokens=20)
    assert usage_json(cached) == {
        "input_tokens": 125,
        "output_tokens": 5,
        "cache_read_tokens": 100,
        "cache_write_tokens": 20,
    }
