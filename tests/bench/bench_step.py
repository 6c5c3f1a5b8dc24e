"""Benchmark: fold a long synthetic session through `step` (run on demand: `make bench`).

The session: 1,000 rounds, each with 50 text deltas and 2 tool calls of 20
argument fragments, both results arriving in reverse order; then a final answer.
Prints events per second and the median cost per event over the first and the
last 1% of the session: flat cost means no whole-history copies per delta.
Goals (issue 2): >= 250,000 events/s on one core; last/first ratio <= 1.3.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from toolreel.core import (
    Event,
    LoopConfig,
    ModelResponded,
    PromptSubmitted,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolSpec,
    Usage,
    initial_state,
    step,
)


def session(rounds: int, deltas: int = 50, fragments: int = 20) -> list[Event]:
    """The synthetic session's events, built before timing starts."""
    usage = Usage(input_tokens=100, output_tokens=20)
    events: list[Event] = [PromptSubmitted(text="Do the long job.")]
    for r in range(rounds):
        events += [TextDelta(text=f"word{i} ") for i in range(deltas)]
        for index in range(2):
            events.append(ToolCallStarted(index=index, call_id=f"r{r}c{index}", name="work"))
            events.append(ToolCallArgumentsDelta(index=index, fragment='{"n": '))
            events += [
                ToolCallArgumentsDelta(index=index, fragment="1") for _ in range(fragments - 2)
            ]
            events.append(ToolCallArgumentsDelta(index=index, fragment="}"))
        events.append(ModelResponded(finish_reason="tool_calls", usage=usage))
        events += [ToolFinished(call_id=f"r{r}c{i}", output='{"ok": true}') for i in (1, 0)]
    events += [TextDelta(text="All done."), ModelResponded(usage=usage)]
    return events


def fold(config: LoopConfig, events: list[Event]) -> float:
    """Fold every event; the seconds it took."""
    state = initial_state(config)
    started = time.perf_counter()
    for event in events:
        state, _ = step(state, event)
    return time.perf_counter() - started


def costs(config: LoopConfig, events: list[Event]) -> list[int]:
    """Fold every event, timing each step alone (nanoseconds, clock overhead included)."""
    state = initial_state(config)
    clock = time.perf_counter_ns
    spent = []
    for event in events:
        before = clock()
        state, _ = step(state, event)
        spent.append(clock() - before)
    return spent


def main() -> None:
    """Run the benchmark a few times and print the best run's figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    config = LoopConfig(
        model="bench", tools=(ToolSpec(name="work"),), max_iterations=args.rounds + 1
    )
    events = session(args.rounds)
    timings = []
    for _ in range(args.repeat):
        gc.collect()
        timings.append(fold(config, events))
    seconds = min(timings)
    gc.collect()
    spent = costs(config, events)
    slice_ = max(1, len(spent) // 100)
    first = statistics.median(spent[:slice_])
    last = statistics.median(spent[-slice_:])
    print(f"events: {len(events):,} in {seconds:.3f} s (best of {args.repeat})")
    print(f"throughput: {len(events) / seconds:,.0f} events/s (goal >= 250,000)")
    print(f"median cost per event, first 1%: {first:,.0f} ns; last 1%: {last:,.0f} ns")
    print(f"last/first ratio: {last / first:.2f} (goal <= 1.3)")


if __name__ == "__main__":
    main()
