"""The figures of tests/bench/bench_scale.py: measured passes in, one table out (pure).

Each engine runs the same sessions at each worker count `reps` times; a cell of the
table shows the fastest pass (a busy machine only ever slows a pass down) and the
range over the passes. Ratios are to the `baseline` engine of the same run: its
sessions/s at the same worker count, and its seconds per model round at one worker,
one session at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

BASELINE = "baseline"


@attrs.frozen
class Result:
    """One measured pass: how much work, how long, how much CPU in each kind of process."""

    engine: str
    workers: int
    sessions: int
    steps: int
    seconds: float
    worker_cpu: float
    server_cpu: float
    model_cpu: float
    client_cpu: float = 0.0

    @property
    def sessions_per_second(self) -> float:
        """Sessions finished per wall-clock second."""
        return self.sessions / self.seconds

    @property
    def steps_per_second(self) -> float:
        """Journaled steps (events folded) per wall-clock second."""
        return self.steps / self.seconds

    def cpu_ms(self) -> tuple[float, float, float, float]:
        """CPU milliseconds per session in the workers, the database or server, the model
        server and a separate client (which a busy machine disturbs less than wall time)."""
        per = 1000 / self.sessions
        cpu = (self.worker_cpu, self.server_cpu, self.model_cpu, self.client_cpu)
        return (cpu[0] * per, cpu[1] * per, cpu[2] * per, cpu[3] * per)


@attrs.frozen
class Cell:
    """The passes of one engine at one worker count: the fastest, and the spread."""

    best: Result
    low: float  #: the slowest pass's sessions/s
    high: float  #: the fastest pass's sessions/s


def cell(passes: Sequence[Result]) -> Cell:
    """The fastest of `passes` (all of one engine and worker count) and their range."""
    if not passes:
        raise ValueError("no passes to summarise")
    rates = [result.sessions_per_second for result in passes]
    best = min(passes, key=lambda result: result.seconds)
    return Cell(best=best, low=min(rates), high=max(rates))


def seconds_per_round(passes: Sequence[Result], rounds_per_session: int) -> tuple[float, float]:
    """The fastest and slowest seconds per model round over `passes`."""
    if not passes:
        raise ValueError("no passes to summarise")
    each = [result.seconds / (result.sessions * rounds_per_session) for result in passes]
    return min(each), max(each)


def ratio(value: float, base: float | None) -> str:
    """`value / base` as `x1.23`, or `-` where there is no baseline to compare with."""
    return f"x{value / base:.2f}" if base else "-"


HEADER = (
    f"{'engine':<9} {'W':>2} {'sessions/s (range)':>20} {'steps/s':>8} {'steps':>5} {'vs base':>7}"
    f"  {'CPU ms/session: workers':>23} {'server':>6} {'model':>6} {'client':>6}"
    f"  {'ms/round (range)':>20} {'x base':>7}"
)


def table(cells: dict[tuple[str, int], Cell], rounds: dict[str, tuple[float, float]]) -> list[str]:
    """The report's lines: one row per engine and worker count, in the order measured.

    `steps` is per session (the same workload on every engine shows the same number);
    `vs base` is the row's sessions/s over the baseline's at the same worker count;
    the per-round columns (one worker, one session at a time) sit on an engine's first
    row, `x base` being its fastest seconds per round over the baseline's.
    """
    lines = [HEADER]
    base_round = rounds[BASELINE][0] if BASELINE in rounds else None
    shown: set[str] = set()
    for (engine, workers), found in cells.items():
        base = cells.get((BASELINE, workers))
        line = row(engine, workers, found, base.best.sessions_per_second if base else None)
        if engine in rounds and engine not in shown:
            fast, slow = rounds[engine]
            spread = f"{fast * 1000:.2f} ({fast * 1000:.2f}-{slow * 1000:.2f})"
            line += f"  {spread:>20} {ratio(fast, base_round):>7}"
        shown.add(engine)
        lines.append(line)
    return lines


def row(engine: str, workers: int, found: Cell, base_rate: float | None) -> str:
    """One engine at one worker count: throughput, steps a session, the ratio, CPU."""
    best = found.best
    cpu = best.cpu_ms()
    rate = f"{best.sessions_per_second:.1f} ({found.low:.1f}-{found.high:.1f})"
    return (
        f"{engine:<9} {workers:>2} {rate:>20} {best.steps_per_second:8.0f}"
        f" {best.steps / best.sessions:5.1f} {ratio(best.sessions_per_second, base_rate):>7}"
        f"  {cpu[0]:23.1f} {cpu[1]:6.1f} {cpu[2]:6.1f} {cpu[3]:6.1f}"
    )
