"""Benchmark: what compaction costs per round (run on demand, never as a timed test).

Folds one synthetic chat of N turns (200 by default) through `step` under each policy —
none, `KeepTurns(20)`, `KeepTokens(4000)` — in the same process, alternating the policies
run by run, on CPU time (`time.process_time`). Each turn: a prompt, 20 text deltas, one
tool call of 5 argument fragments, its result, 20 more text deltas; usage unreported, so
`KeepTokens` counts four characters a token. Prints each policy's CPU per round (a model
call and what it streamed) and its ratio to no policy, from the best of the runs.

    .venv/bin/python tests/bench/bench_compaction.py [--turns 200] [--runs 7]
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

from toolreel.core import (
    LoopConfig,
    ModelResponded,
    PromptSubmitted,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolSpec,
    initial_state,
    step,
)
from toolreel.core.compaction import KeepTokens, KeepTurns

WORK = ToolSpec(name="work", description="Do some work")


def chat(turns: int) -> list[Any]:
    """The synthetic chat's events (built before timing starts)."""
    events: list[Any] = []
    for turn in range(turns):
        events.append(PromptSubmitted(text=f"Question {turn}: " + "q" * 120))
        events += [TextDelta(text=f"word{i} ") for i in range(20)]
        events.append(ToolCallStarted(index=0, call_id=f"c{turn}", name="work"))
        pieces = ('{"n"', ": ", "1", "2", "}")
        events += [ToolCallArgumentsDelta(index=0, fragment=piece) for piece in pieces]
        events.append(ModelResponded(finish_reason="tool_calls"))
        events.append(ToolFinished(call_id=f"c{turn}", output="r" * 200))
        events += [TextDelta(text=f"answer{i} ") for i in range(20)]
        events.append(ModelResponded())
    return events


def fold(config: LoopConfig, events: list[Any]) -> float:
    """CPU seconds to fold `events` from the initial state."""
    state = initial_state(config)
    gc.collect()
    started = time.process_time()
    for event in events:
        state, _ = step(state, event)
    return time.process_time() - started


def main() -> None:
    """Time each policy, alternating, and print the per-round costs and ratios."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    events = chat(args.turns)
    policies = {
        "none": None,
        "KeepTurns(20)": KeepTurns(turns=20),
        "KeepTokens(4000)": KeepTokens(tokens=4000),
    }
    configs = {
        name: LoopConfig(model="m", tools=(WORK,), compaction=policy)
        for name, policy in policies.items()
    }
    best = dict.fromkeys(configs, float("inf"))
    for _ in range(args.runs):
        for name, config in configs.items():
            best[name] = min(best[name], fold(config, events))
    rounds = 2 * args.turns
    print(f"{args.turns} turns, {rounds} rounds, {len(events)} events; best of {args.runs}")
    for name, seconds in best.items():
        ratio = seconds / best["none"]
        print(f"{name:>18}: {seconds / rounds * 1e6:8.1f} µs CPU per round  ({ratio:.2f}x none)")


if __name__ == "__main__":
    main()
