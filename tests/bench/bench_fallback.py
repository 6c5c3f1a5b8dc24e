"""Benchmark: what a configured but unused fallback costs per round (run on demand).

Folds bench_step.py's synthetic session (N rounds of 50 text deltas and 2 tool
calls of 20 fragments) through `step` under two configs — no fallback, and a
`FallbackPolicy` of two models that never fires — alternating run by run in one
process, and prints each one's CPU microseconds per round and their ratio.
`--baseline DIR` adds another checkout's core (no fallback; e.g. main before this
change), timed in the same alternation.

    .venv/bin/python tests/bench/bench_fallback.py [--rounds 1000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path
from typing import Any

from bench_step import load_core, session

import toolreel.core
from toolreel.core.policies import FallbackPolicy


class Config:
    """One core under one config: its events and its best fold so far."""

    def __init__(self, label: str, core: Any, rounds: int, **extra: Any) -> None:
        """The config (with `extra` fields) and the session's events, from `core`'s classes."""
        self.label = label
        self.core = core
        self.rounds = rounds
        self.config = core.LoopConfig(
            model="bench", tools=(core.ToolSpec(name="work"),), max_iterations=rounds + 1, **extra
        )
        self.events = session(core, rounds)
        self.best = float("inf")

    def fold(self) -> None:
        """Fold every event once, keeping the fastest run's CPU seconds."""
        step = self.core.step
        state = self.core.initial_state(self.config)
        gc.collect()
        started = time.process_time()
        for event in self.events:
            state, _ = step(state, event)
        self.best = min(self.best, time.process_time() - started)

    @property
    def per_round(self) -> float:
        """CPU microseconds per round of the best run."""
        return self.best / self.rounds * 1e6


def main() -> None:
    """Time the configs alternately and print the per-round costs and ratios."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--baseline", type=Path, help="a checkout whose core/ to add")
    args = parser.parse_args()
    unused = FallbackPolicy(models=("backup", "last-resort"), on_status={503})
    configs = [
        Config("no fallback", toolreel.core, args.rounds),
        Config("fallback, unused", toolreel.core, args.rounds, fallback=unused),
    ]
    if args.baseline is not None:
        configs.append(
            Config(f"baseline {args.baseline.name}", load_core(args.baseline), args.rounds)
        )
    for _ in range(args.repeat):
        for config in configs:
            config.fold()
    for config in configs:
        print(f"[{config.label}] {config.per_round:,.1f} µs per round (best of {args.repeat})")
    none = configs[0]
    for config in configs[1:]:
        print(f"ratio {config.label} / {none.label}: {config.per_round / none.per_round:.3f}")


if __name__ == "__main__":
    main()
