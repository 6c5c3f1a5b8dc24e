"""Benchmark: the cold start of `import toolreel.shell` against `import httpx2` (run on demand).

Each rep starts fresh interpreters, alternating the statements so that a busy
machine slows them alike, and times each with `time.perf_counter` around
`subprocess.run`; the medians are printed with their ratio to `import httpx2`.
Bytecode is cached as an installed package has it (pip compiles on install),
in a temporary PYTHONPYCACHEPREFIX, whatever PYTHONDONTWRITEBYTECODE says:
recompiling toolreel's sources on every start would double its import time.
`import toolreel.shell; import httpx2; import asyncio` is timed too: httpx2 is
imported lazily, by the first HTTP model, and asyncio by the program's event loop
(toolreel names it only in code that runs on one), so that line is what a program
that calls a provider pays. Goal (issues 10, 22): `import toolreel.shell` <= 1.5x `import httpx2`
(httpx2 replaced httpx in issue 21; `import httpx` is timed beside it). What one
conversation does not use (other codecs and journals, agents, fork, rerun, replay, ...)
is imported at first use; tests/test_import_cost.py pins which modules stay unloaded.
`--python` times another checkout's interpreter (e.g. main's .venv) for a before/after.

    python tests/bench/bench_import.py [--reps 40] [--python PATH] [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

STATEMENTS = {
    "python": "pass",
    "httpx2": "import httpx2",
    "httpx": "import httpx",
    "toolreel.shell": "import toolreel.shell",
    "toolreel.shell + httpx2 + asyncio": "import toolreel.shell; import httpx2; import asyncio",
}


def once(python: str, statement: str, env: dict[str, str]) -> float:
    """Seconds for one fresh interpreter to run `statement`."""
    started = time.perf_counter()
    subprocess.run([python, "-c", statement], check=True, env=env)
    return time.perf_counter() - started


def measure(python: str, reps: int, env: dict[str, str]) -> dict[str, float]:
    """Median seconds of each statement over `reps` alternating rounds."""
    times: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for statement in STATEMENTS.values():  # warm the file cache (and the bytecode)
        once(python, statement, env)
    for _ in range(reps):
        for name, statement in STATEMENTS.items():
            times[name].append(once(python, statement, env))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    """Time the imports and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--pythonpath", help="put this first on PYTHONPATH (another tree)")
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    with tempfile.TemporaryDirectory() as cache:
        env["PYTHONPYCACHEPREFIX"] = cache
        medians = measure(args.python, args.reps, env)
    base = medians["httpx2"]
    for name, seconds in medians.items():
        print(f"{name:34} {seconds * 1000:7.1f} ms  {seconds / base:5.2f}x import httpx2")


if __name__ == "__main__":
    main()
