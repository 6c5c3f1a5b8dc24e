"""Benchmark: fold a long synthetic session through `step` (run on demand: `make bench`).

The session: N rounds (1,000 by default), each with 50 text deltas and 2 tool
calls of 20 argument fragments, both results arriving in reverse order; then a
final answer. Prints events per second and the median cost per event over the
first and the last 1% of the session: flat cost means no whole-history copies
per delta.

`--baseline DIR` also loads the core of another checkout (DIR/core, e.g. a
`git worktree` or `git archive` of an older commit) under a private package name
and times it in the same process, alternating with this checkout's run by run,
so all see the same machine at the same moment; it prints the events/s ratio of
the best runs. Give it more than once to compare with several checkouts in one run.
Throughput is timed in CPU seconds of this process (`time.process_time`), so
that other work on a busy machine does not count; the per-event costs use the
wall clock, whose reads are cheaper.
Goals (issue 10): >= 1.4x the events/s of commit 495750a on 1,000 rounds;
last/first cost ratio <= 1.3 up to 10,000 rounds.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import toolreel.core


def load_core(checkout: Path, name: str = "toolreel_baseline_core") -> ModuleType:
    """Import `checkout/core` as the package `name` (its imports are relative)."""
    init = checkout / "core" / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(init.parent)]
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"no core package at {init.parent}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def session(core: Any, rounds: int, deltas: int = 50, fragments: int = 20) -> list[Any]:
    """The synthetic session's events (built from `core`'s classes, before timing starts)."""
    usage = core.Usage(input_tokens=100, output_tokens=20)
    events: list[Any] = [core.PromptSubmitted(text="Do the long job.")]
    for r in range(rounds):
        events += [core.TextDelta(text=f"word{i} ") for i in range(deltas)]
        for index in range(2):
            events.append(core.ToolCallStarted(index=index, call_id=f"r{r}c{index}", name="work"))
            events.append(core.ToolCallArgumentsDelta(index=index, fragment='{"n": '))
            events += [
                core.ToolCallArgumentsDelta(index=index, fragment="1") for _ in range(fragments - 2)
            ]
            events.append(core.ToolCallArgumentsDelta(index=index, fragment="}"))
        events.append(core.ModelResponded(finish_reason="tool_calls", usage=usage))
        events += [core.ToolFinished(call_id=f"r{r}c{i}", output='{"ok": true}') for i in (1, 0)]
    events += [core.TextDelta(text="All done."), core.ModelResponded(usage=usage)]
    return events


class Contestant:
    """One core under test: its config, its events, and its timings so far."""

    def __init__(self, label: str, core: Any, rounds: int) -> None:
        """Build the config and the events from `core`'s own classes."""
        self.label = label
        self.core = core
        self.config = core.LoopConfig(
            model="bench", tools=(core.ToolSpec(name="work"),), max_iterations=rounds + 1
        )
        self.events = session(core, rounds)
        self.timings: list[float] = []

    def fold(self) -> float:
        """Fold every event once; record and return the CPU seconds it took."""
        step = self.core.step
        state = self.core.initial_state(self.config)
        gc.collect()
        started = time.process_time()
        for event in self.events:
            state, _ = step(state, event)
        spent = time.process_time() - started
        self.timings.append(spent)
        return spent

    def costs(self) -> list[int]:
        """Fold every event, timing each step alone (nanoseconds, clock overhead included)."""
        step = self.core.step
        state = self.core.initial_state(self.config)
        clock = time.perf_counter_ns
        spent = []
        gc.collect()
        for event in self.events:
            before = clock()
            state, _ = step(state, event)
            spent.append(clock() - before)
        return spent

    @property
    def rate(self) -> float:
        """Events per second of the best run."""
        return len(self.events) / min(self.timings)

    def report(self) -> None:
        """Print the best run's throughput and the first/last 1% cost per event."""
        spent = self.costs()
        slice_ = max(1, len(spent) // 100)
        first = statistics.median(spent[:slice_])
        last = statistics.median(spent[-slice_:])
        print(f"[{self.label}] events: {len(self.events):,}, best of {len(self.timings)} runs")
        print(f"[{self.label}] throughput: {self.rate:,.0f} events/s")
        print(f"[{self.label}] median ns per event, first 1%: {first:,.0f}; last 1%: {last:,.0f}")
        print(f"[{self.label}] last/first ratio: {last / first:.2f} (goal <= 1.3)")


def main() -> None:
    """Time this checkout's core (and a baseline's, alternating) and print the figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        help="a checkout whose core/ to compare with (repeatable)",
    )
    args = parser.parse_args()
    contestants = [Contestant("this", toolreel.core, args.rounds)]
    for number, checkout in enumerate(args.baseline):
        core = load_core(checkout, f"toolreel_baseline_core_{number}")
        contestants.append(Contestant(checkout.name or str(checkout), core, args.rounds))
    for _ in range(args.repeat):
        for contestant in contestants:
            contestant.fold()
    for contestant in contestants:
        contestant.report()
    ours = contestants[0]
    for theirs in contestants[1:]:
        ratio = ours.rate / theirs.rate
        print(f"ratio this/{theirs.label}: {ratio:.2f}x (goal >= 1.4x vs 495750a)")


if __name__ == "__main__":
    main()
