"""Benchmark: replay a long journal from SQLite (run on demand).

Builds SQLite journals of an R-round session (default 10,000 rounds; the
session of bench_step.py: 50 text deltas and 2 streamed tool calls of 20
argument fragments per round), then
replays it — reading and decoding every row, folding every event through
`step`, comparing every effect with the recorded one — and prints events per
second and the peak memory of the replay at R/10 and R rounds (flat memory per
event means it grows with the records, not with the events).
Goal (issue 5): >= 200,000 events/s including decoding from SQLite.

`--baseline DIR` compares with another checkout (DIR/core, DIR/adapters and
DIR/shell, e.g. a `git worktree` of commit 495750a): it runs this script in a
fresh process per contestant with `--throughput` (build one journal with that
checkout's code, replay it, print the CPU seconds), alternating the two
`--repeat` times so both see the same machine, and prints the median of the
per-pair events/s ratios. CPU time of the process (`time.process_time`) is what
counts, so other work on a busy machine does not.
Goal (issue 10): >= 2x the events/s of commit 495750a.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
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


def throughput(rounds: int, repeat: int) -> None:
    """Build one journal, replay it `repeat` times; print the best CPU seconds as JSON."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        _, events = build(path, rounds)
        best = float("inf")
        for _ in range(repeat):
            journal = SQLiteJournal(path)
            gc.collect()
            started = time.process_time()
            result = replay(journal, "bench")
            best = min(best, time.process_time() - started)
            journal.close()
            assert not isinstance(result, Divergence), str(result)
    print(json.dumps({"events": events, "cpu_s": best}))


def contestant(pythonpath: str | None, rounds: int) -> float:
    """Run `--throughput` in a fresh process (a baseline's package first on the path): events/s."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    command = [sys.executable, __file__, "--throughput", "--rounds", str(rounds)]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    return float(figures["events"]) / float(figures["cpu_s"])


def baseline_package(checkout: Path, folder: Path) -> str:
    """A folder holding `toolreel/` made of the checkout's core, adapters and shell: its path."""
    package = folder / "toolreel"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for part in ("core", "adapters", "shell"):
        (package / part).symlink_to((checkout / part).resolve())
    return str(folder)


def compare(checkout: Path, rounds: int, repeat: int) -> None:
    """Alternate this checkout and the baseline, one process each; print the median ratio."""
    ratios = []
    with tempfile.TemporaryDirectory() as folder:
        pythonpath = baseline_package(checkout, Path(folder))
        for run in range(repeat):
            ours, theirs = contestant(None, rounds), contestant(pythonpath, rounds)
            ratios.append(ours / theirs)
            print(
                f"run {run + 1}: this {ours:,.0f} events/s, baseline {theirs:,.0f}: "
                f"{ours / theirs:.2f}x",
                flush=True,
            )
    print(f"median ratio this/baseline: {statistics.median(ratios):.2f}x (goal >= 2x)")


def main() -> None:
    """Build, replay, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a checkout to compare with (see above)")
    parser.add_argument("--throughput", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.throughput:
        throughput(args.rounds, 3)
    elif args.baseline is not None:
        compare(args.baseline, args.rounds, args.repeat)
    else:
        report(args.rounds)


def report(rounds: int) -> None:
    """Replay journals of `rounds` and of a tenth of it; print speed and peak memory."""
    with tempfile.TemporaryDirectory() as folder:
        small, large = Path(folder) / "small.db", Path(folder) / "large.db"
        chatty = Path(folder) / "chatty.db"
        _, small_events = build(small, rounds // 10)
        _, chatty_events = build(chatty, rounds // 10, deltas=250)
        _, events = build(large, rounds)
        seconds = min(timed(large) for _ in range(2))
        _, small_peak = measure(small)
        _, chatty_peak = measure(chatty)
        _, large_peak = measure(large)
    print(f"journal: {rounds:,} rounds, {events:,} events")
    print(f"replay: {seconds:.2f} s, {events / seconds:,.0f} events/s (goal >= 200,000)")
    print(
        f"peak memory: {small_peak / 1e6:.1f} MB at {rounds // 10:,} rounds, "
        f"{large_peak / 1e6:.1f} MB at {rounds:,} rounds; per event "
        f"{small_peak / small_events:.0f} B vs {large_peak / events:.0f} B"
    )
    print(
        f"same {rounds // 10:,} rounds with 5x the text deltas ({chatty_events:,} events): "
        f"{chatty_peak / 1e6:.1f} MB (vs {small_peak / 1e6:.1f} MB for {small_events:,} events)"
    )


if __name__ == "__main__":
    main()
