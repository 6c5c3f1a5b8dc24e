"""Benchmark: replay a long journal from SQLite (run on demand).

Builds SQLite journals of an R-round session (default 10,000 rounds; the
session of bench_step.py: 50 text deltas and 2 streamed tool calls of 20
argument fragments per round), then
replays it — reading and decoding every row, folding every event through
`step`, comparing every effect with the recorded one — and prints events per
second and the peak memory of the replay at R/10 and R rounds (flat memory per
event means it grows with the records, not with the events).
Goal (issue 5): >= 200,000 events/s including decoding from SQLite.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import toolreel.core
from toolreel.adapters import SQLiteJournal, Step
from toolreel.core import LoopConfig, ToolSpec, initial_state, step
from toolreel.shell import Divergence, replay

sys.path.insert(0, str(Path(__file__).parent))
from bench_step import session


def build(path: Path, rounds: int, deltas: int = 50) -> tuple[str, int]:
    """A journal of one synthetic session; its id and event count."""
    config = LoopConfig(model="bench", tools=(ToolSpec(name="work"),), max_iterations=rounds + 1)
    journal = SQLiteJournal(path)
    journal.begin("bench", config)
    state, batch, seq = initial_state(config), [], 0
    for event in session(toolreel.core, rounds, deltas=deltas):
        state, effects = step(state, event)
        seq += 1
        batch.append(Step(seq=seq, event=event, effects=effects))
        if len(batch) == 5000:
            journal.append("bench", batch)
            batch = []
    journal.append("bench", batch)
    journal.close()
    return "bench", seq


def measure(path: Path) -> tuple[float, int]:
    """Replay the journal once: seconds and peak traced memory in bytes."""
    journal = SQLiteJournal(path)
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    result = replay(journal, "bench")
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    journal.close()
    assert not isinstance(result, Divergence), str(result)
    return seconds, peak


def timed(path: Path) -> float:
    """Replay the journal once without tracing: seconds."""
    journal = SQLiteJournal(path)
    gc.collect()
    started = time.perf_counter()
    result = replay(journal, "bench")
    seconds = time.perf_counter() - started
    journal.close()
    assert not isinstance(result, Divergence)
    return seconds


def main() -> None:
    """Build, replay, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        small, large = Path(folder) / "small.db", Path(folder) / "large.db"
        chatty = Path(folder) / "chatty.db"
        _, small_events = build(small, args.rounds // 10)
        _, chatty_events = build(chatty, args.rounds // 10, deltas=250)
        _, events = build(large, args.rounds)
        seconds = min(timed(large) for _ in range(2))
        _, small_peak = measure(small)
        _, chatty_peak = measure(chatty)
        _, large_peak = measure(large)
    print(f"journal: {args.rounds:,} rounds, {events:,} events")
    print(f"replay: {seconds:.2f} s, {events / seconds:,.0f} events/s (goal >= 200,000)")
    print(
        f"peak memory: {small_peak / 1e6:.1f} MB at {args.rounds // 10:,} rounds, "
        f"{large_peak / 1e6:.1f} MB at {args.rounds:,} rounds; per event "
        f"{small_peak / small_events:.0f} B vs {large_peak / events:.0f} B"
    )
    print(
        f"same {args.rounds // 10:,} rounds with 5x the text deltas ({chatty_events:,} events): "
        f"{chatty_peak / 1e6:.1f} MB (vs {small_peak / 1e6:.1f} MB for {small_events:,} events)"
    )


if __name__ == "__main__":
    main()
