"""Benchmark: what a tool costs to declare and to run (run on demand, not part of `make test`).

Each rep starts a fresh interpreter per tree (this one, and with `--pythonpath` another,
e.g. a checkout of main, alternating so a busy machine slows both alike) which imports
toolreel.shell untimed, then times in-process with `time.perf_counter`:

- `first call`: the first `Tool.run` of `add(a: int, b: int) -> int` in the process (after
  a first, untimed `anyio.run`) — what a conversation's first tool call pays, lazy imports
  (and the garbage collection they set off) included; and whether cattrs was loaded by then;
- `steady call`: the median `Tool.run` of the same tool over the next calls (µs);
- `@tool plain`: declaring a tool of two int parameters with a one-line docstring (µs);
- `@tool google, first` / `steady`: one with an `Args:` section (the first loads griffe);
- `@tool pydantic`: one with a Pydantic model parameter (after a first, untimed);
- `pydantic call`: the median `Tool.run` of that tool (this tree only: main has none).

Medians over the reps are printed per tree, and the ratio this/other where there are two.

    python tests/bench/bench_tools.py [--reps 15] [--pythonpath DIR_OF_OTHER_TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

PLAIN = """
@tool
def mul(a: int, b: int) -> int:
    '''Multiply two integers.'''
    return a * b
"""
GOOGLE = """
@tool
def mul(a: int, b: int) -> int:
    '''Multiply two integers.

    Args:
        a: The first factor.
        b: The second factor.
    '''
    return a * b
"""
PYDANTIC = """
@tool
def visit(place: Place, days: int) -> str:
    '''Visit a place.'''
    return place.name
"""


def child() -> None:
    """One interpreter's measurements, printed as JSON (toolreel.shell imported untimed)."""
    import anyio  # noqa: PLC0415 - the child's imports are its own business
    from pydantic import BaseModel  # noqa: PLC0415

    from toolreel.shell import tool  # noqa: PLC0415

    class Place(BaseModel):
        name: str
        population: int = 0

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def calls(tool_: Any, arguments: str, n: int) -> tuple[list[float], Any]:
        times = []
        for _ in range(n):
            started = time.perf_counter()
            result = await tool_.run(arguments)
            times.append(time.perf_counter() - started)
        return times, result

    def declare(source: str, n: int) -> tuple[list[float], dict[str, Any]]:
        namespace: dict[str, Any] = {"tool": tool, "Place": Place}
        code = compile(source, "bench", "exec")
        times = []
        for _ in range(n):
            started = time.perf_counter()
            exec(code, namespace)
            times.append(time.perf_counter() - started)
        return times, namespace

    out: dict[str, Any] = {}
    anyio.run(anyio.sleep, 0)  # the event loop's own first-run imports, untimed
    started = time.perf_counter()
    anyio.run(calls, add, '{"a": 1, "b": 2}', 1)
    out["first call (ms)"] = (time.perf_counter() - started) * 1e3
    out["cattrs loaded (1 = yes)"] = float("cattrs" in sys.modules)
    times, _ = anyio.run(calls, add, '{"a": 1, "b": 2}', 2000)
    out["steady call (us)"] = statistics.median(times) * 1e6
    out["@tool plain (us)"] = statistics.median(declare(PLAIN, 500)[0]) * 1e6
    out["@tool google, first (ms)"] = declare(GOOGLE, 1)[0][0] * 1e3
    out["@tool google, steady (us)"] = statistics.median(declare(GOOGLE, 500)[0]) * 1e6
    declare(PYDANTIC, 1)
    times, namespace = declare(PYDANTIC, 200)
    out["@tool pydantic (us)"] = statistics.median(times) * 1e6
    arguments = '{"place": {"name": "Delft"}, "days": 2}'
    times, result = anyio.run(calls, namespace["visit"], arguments, 2000)
    out["pydantic call (us)"] = statistics.median(times) * 1e6 if "Delft" in str(result) else None
    print(json.dumps(out))


def measure(pythonpath: str | None) -> dict[str, float | None]:
    """One fresh interpreter's measurements (with `pythonpath` first on its path)."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    """Alternate the trees, rep by rep, and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--pythonpath", help="another tree to compare (a toolreel/ link farm)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    trees = {"this": None, **({"other": args.pythonpath} if args.pythonpath else {})}
    runs: dict[str, list[dict[str, float | None]]] = {name: [] for name in trees}
    for _ in range(args.reps):
        for name, path in trees.items():
            runs[name].append(measure(path))
    keys = list(runs["this"][0])
    header = "".join(f"{name:>12}" for name in trees)
    print(f"{'':28}{header}" + ("   this/other" if len(trees) > 1 else ""))
    for key in keys:
        medians = {}
        for name in trees:
            values = [value for run in runs[name] if (value := run[key]) is not None]
            medians[name] = statistics.median(values) if values else None
        cells = "".join(
            f"{'-' if value is None else format(value, '.1f'):>12}" for value in medians.values()
        )
        ratio = ""
        if len(trees) > 1 and medians["other"] and medians["this"] is not None:
            ratio = f"   {medians['this'] / medians['other']:.2f}x"
        print(f"{key:28}{cells}{ratio}")


if __name__ == "__main__":
    main()
