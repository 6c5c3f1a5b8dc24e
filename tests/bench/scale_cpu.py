"""CPU seconds of processes, from Linux's /proc (tests/bench/bench_scale.py's accounting).

Each figure is user + system time with that of the process's ended children
(cutime, cstime), so a PostgreSQL backend that exited with its worker still counts.
"""

from __future__ import annotations

import os
from pathlib import Path


def tree_cpu(pid: int) -> float:
    """CPU seconds used so far by process `pid` and its children, live or ended (a
    PostgreSQL backend exits when its worker disconnects)."""
    total = cpu_of(pid)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _fields(stat)
        if fields is not None and int(fields[1][1]) == pid:
            total += _ticks(fields[1])
    return total


def machine_postgres_cpu() -> float:
    """CPU seconds used so far by every `postgres` process of this machine."""
    return sum(
        _ticks(fields[1])
        for stat in Path("/proc").glob("[0-9]*/stat")
        if (fields := _fields(stat)) is not None and fields[0] == "postgres"
    )


def cpu_of(pid: int) -> float:
    """CPU seconds used so far by process `pid` and its ended children (0 if gone)."""
    fields = _fields(Path(f"/proc/{pid}/stat"))
    return 0.0 if fields is None else _ticks(fields[1])


def _fields(stat: Path) -> tuple[str, list[str]] | None:
    """A process's name and the fields after it in its /proc stat (None if gone)."""
    try:
        head, tail = stat.read_text().rsplit(")", 1)
    except (OSError, ValueError):
        return None
    return head.split("(", 1)[-1], tail.split()


def _ticks(values: list[str]) -> float:
    """User + system CPU seconds, with ended children's, from the fields after the name."""
    ticks = sum(int(value) for value in values[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")
