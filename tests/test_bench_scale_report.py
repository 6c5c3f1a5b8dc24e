"""The scale bench's table: fastest pass, range, and ratios to the baseline of the same run.

tests/bench/scale_report.py turns measured passes into the figures docs/benchmarks.md quotes; these
check its arithmetic on made-up passes (nothing is timed here).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "bench"))

from scale_report import Cell, Result, cell, ratio, seconds_per_round, table


def result(engine: str, seconds: float, *, workers: int = 1, sessions: int = 100) -> Result:
    """A pass of `sessions` sessions of 13 steps in `seconds`, with round CPU figures."""
    return Result(
        engine=engine,
        workers=workers,
        sessions=sessions,
        steps=13 * sessions,
        seconds=seconds,
        worker_cpu=2.0,
        server_cpu=0.5,
        model_cpu=0.25,
        client_cpu=0.1,
    )


def test_cell_shows_the_fastest_pass_and_the_range_of_rates() -> None:
    passes = [result("sqlite", 5.0), result("sqlite", 2.0), result("sqlite", 4.0)]

    found = cell(passes)

    assert found == Cell(best=passes[1], low=20.0, high=50.0)


def test_cell_of_no_passes_is_refused() -> None:
    with pytest.raises(ValueError, match="no passes"):
        cell([])


def test_seconds_per_round_divides_by_every_round_of_every_session() -> None:
    passes = [result("baseline", 1.2, sessions=60), result("baseline", 0.6, sessions=60)]

    assert seconds_per_round(passes, 2) == (0.005, 0.01)


def test_cpu_is_reported_in_milliseconds_per_session() -> None:
    assert result("postgres", 1.0).cpu_ms() == (20.0, 5.0, 2.5, 1.0)


def test_ratio_without_a_baseline_is_a_dash() -> None:
    assert (ratio(3.0, 2.0), ratio(3.0, None), ratio(3.0, 0.0)) == ("x1.50", "-", "-")


def test_table_compares_each_engine_with_the_baseline_at_the_same_worker_count() -> None:
    cells = {
        ("baseline", 1): cell([result("baseline", 4.0)]),
        ("baseline", 2): cell([result("baseline", 2.0, workers=2)]),
        ("temporal", 1): cell([result("temporal", 16.0)]),
        ("temporal", 2): cell([result("temporal", 10.0, workers=2)]),
    }
    rounds = {"baseline": (0.005, 0.006), "temporal": (0.02, 0.03)}

    lines = table(cells, rounds)

    rows = [line.split() for line in lines[1:]]
    assert [row[:2] for row in rows] == [
        ["baseline", "1"],
        ["baseline", "2"],
        ["temporal", "1"],
        ["temporal", "2"],
    ]
    assert [row[6] for row in rows] == ["x1.00", "x1.00", "x0.25", "x0.20"]  # vs base
    assert rows[0][-3:] == ["5.00", "(5.00-6.00)", "x1.00"]
    assert rows[2][-3:] == ["20.00", "(20.00-30.00)", "x4.00"]  # per round: on first rows only
    assert len(rows[1]) == len(rows[3]) == 11
    assert rows[2][2:6] == ["6.2", "(6.2-6.2)", "81", "13.0"]  # sessions/s (range), steps/s, steps


def test_table_without_a_baseline_shows_no_ratios() -> None:
    lines = table({("sqlite", 1): cell([result("sqlite", 2.0)])}, {"sqlite": (0.01, 0.01)})

    assert lines[1].split()[6] == "-"
    assert lines[1].split()[-1] == "-"
