"""Benchmark: what a text delta costs as an answer grows (run on demand).

Folds a prompt, then N text deltas of 8 characters each, then the response's end,
through `step`; prints the CPU nanoseconds per delta at N = 1,000 and N = 20,000.
Flat means a delta costs the same however long the answer already is: the stream
keeps its text in pieces, joined once when the response ends (core/_response.py).
`--baseline DIR` (repeatable) times another checkout's core in the same process
(bench_step.py's `load_core`), alternating run by run.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path
from typing import Any

import toolreel.core

sys.path.insert(0, str(Path(__file__).parent))
from bench_step import load_core

SIZES = (1_000, 20_000)


def per_delta(core: Any, deltas: int) -> float:
    """CPU ns per delta of one fold of a prompt and `deltas` text deltas (the end untimed)."""
    config = core.LoopConfig(model="bench")
    events = [core.TextDelta(text=f"word{i % 1000:03d} "[:8]) for i in range(deltas)]
    state, _ = core.step(core.initial_state(config), core.PromptSubmitted(text="Tell me."))
    step = core.step
    gc.collect()
    started = time.process_time()
    for event in events:
        state, _ = step(state, event)
    spent = time.process_time() - started
    step(state, core.ModelResponded())
    return spent / deltas * 1e9


def main() -> None:
    """Time each core at each size (best of `--repeat`), alternating, and print the figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, action="append", default=[])
    args = parser.parse_args()
    cores = [("this", toolreel.core)]
    for number, checkout in enumerate(args.baseline):
        cores.append((checkout.name, load_core(checkout, f"toolreel_long_answer_{number}")))
    best: dict[tuple[str, int], float] = {}
    for _ in range(args.repeat):
        for label, core in cores:
            for size in SIZES:
                cost = per_delta(core, size)
                best[(label, size)] = min(best.get((label, size), cost), cost)
    for label, _ in cores:
        small, large = (best[(label, size)] for size in SIZES)
        print(
            f"[{label}] ns per delta: {small:,.0f} at {SIZES[0]:,} deltas, "
            f"{large:,.0f} at {SIZES[1]:,} ({large / small:.2f}x)"
        )


if __name__ == "__main__":
    main()
