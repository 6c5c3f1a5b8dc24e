"""Benchmark (on demand): the cost per streamed piece of masking keys split across pieces.

Compares iterating 160,000 text pieces bare with iterating them through
`adapters/_held.py`'s `held_back` (what every model stream of a run with a
known key goes through), alternating, on CPU time:

    .venv/bin/python tests/bench/bench_held.py
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import anyio

from toolreel.adapters._held import held_back
from toolreel.adapters._redact import Redactor
from toolreel.core import ModelEvent, ModelResponded, TextDelta

WORDS = "the quick brown fox jumps over the lazy dog, and so on sk is fine".split()  # noqa: SIM905
EVENTS: list[ModelEvent] = [TextDelta(text=w + " ") for w in WORDS * 10_000]
EVENTS.append(ModelResponded())
REDACTOR = Redactor.of(["sk-proj-Zq8vN3xR7tLw2Yp5Kd9Hs4Bm6Jc1Fg0"])


async def source() -> AsyncIterator[ModelEvent]:
    """The pieces, as a model port yields them."""
    for event in EVENTS:
        yield event


async def bare() -> int:
    """Iterate the pieces."""
    return len([event async for event in source()])


async def held() -> int:
    """Iterate the pieces through `held_back`."""
    return len([event async for event in held_back(source(), REDACTOR)])


def per_piece(run: Callable[[], Coroutine[Any, Any, int]]) -> float:
    """CPU microseconds per piece."""
    start = time.process_time()
    anyio.run(run)
    return (time.process_time() - start) / len(EVENTS) * 1e6


def main() -> None:
    """Alternate five times; print the medians and their ratio."""
    bares, helds = [], []
    for _ in range(5):
        bares.append(per_piece(bare))
        helds.append(per_piece(held))
    b, h = sorted(bares)[2], sorted(helds)[2]
    print(f"bare {b:.2f} us/piece, held_back {h:.2f} us/piece: +{h - b:.2f} us ({h / b:.1f}x)")


if __name__ == "__main__":
    main()
