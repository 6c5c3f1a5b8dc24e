"""Benchmark: client CPU per session when many chats run at once (run on demand).

A web backend serves many chats at once, each with its own `Client`. Here
every session is one `Client` entered, one prompt answered in one round (a
short streamed text) by a scripted OpenAI-compatible server on 127.0.0.1 in its
own process, and closed; S sessions (default 300) run with K in flight at a
time (K = 1, 10, 100, 500; S is raised to K where K is larger). What is
measured is the client process's CPU time (`time.process_time`) for all S
sessions, divided by S, after one untimed warm-up session; the table gives each
K's cost and its ratio to K=1 of the same tree. Goal (issue 21): K=100 at most
1.3x K=1.

Each tree runs in fresh interpreters through this venv's Python, with
PYTHONPATH pointing at a folder that links the tree's core/, adapters/, shell/
as toolreel.* (as tests/bench/bench_sessions.py does). The trees: this one
("now"), and a base commit exported with `git archive` (default bfd8293, on
httpx; the dev extra keeps httpx installed for it), which `--alias` also runs
with `httpx2.alias_httpx()` ("base+httpx2": httpx2 without toolreel's own
pooling changes). Runs are interleaved (rep, then K, then tree), so machine
load spreads over all; medians of the reps are printed. The machine load
(`os.getloadavg`) is printed before and after: compare ratios from one run.

    python tests/bench/bench_concurrency.py [--sessions 300] [--in-flight 1 10 100 500]
        [--reps 3] [--base bfd8293 | --no-base] [--alias] [--profile K]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"core": "core", "adapters": "adapters", "shell": "shell", "testing": "shell/testing"}
#: The server process: the scripted server of this tree, answering every request with a short
#: streamed text. asyncio's listen backlog (100) would drop the SYNs of 500 simultaneous
#: connects (retried a second later): a deeper one keeps the wall time honest.
SERVER = """
import asyncio, functools, sys
asyncio.start_server = functools.partial(asyncio.start_server, backlog=2048)
from toolreel.shell.scripted import ScriptedServer, text
with ScriptedServer(lambda request: text("hello there, general kenobi")) as server:
    print(server.url, flush=True)
    sys.stdin.read()
"""


async def session(options: Any) -> None:
    """One chat: a Client of its own, one prompt, its answer, closed."""
    from toolreel.shell import Client  # noqa: PLC0415 - the tree under test

    async with Client(options) as client:
        await client.query("hi")
        finish = await client.wait()
    assert "kenobi" in finish.text, finish


async def sessions(options: Any, count: int, in_flight: int) -> None:
    """`count` sessions, `in_flight` at a time (each worker starts the next when one ends)."""
    import anyio  # noqa: PLC0415

    left = count

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await session(options)

    async with anyio.create_task_group() as tasks:
        for _ in range(min(in_flight, count)):
            tasks.start_soon(worker)


async def worker(url: str, count: int, in_flight: int, profile: str | None) -> dict[str, float]:
    """One pass: a warm-up session, then the timed ones; CPU and wall ms per session."""
    import gc  # noqa: PLC0415

    from toolreel.shell import AgentOptions  # noqa: PLC0415 - the tree under test

    options = AgentOptions(model="bench", base_url=url, api_key="sk-bench")
    await session(options)
    gc.collect()
    profiler = None
    if profile:
        import cProfile  # noqa: PLC0415

        profiler = cProfile.Profile()
        profiler.enable()
    cpu, wall = time.process_time(), time.perf_counter()
    await sessions(options, count, in_flight)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if profiler is not None and profile:
        profiler.disable()
        profiler.dump_stats(profile)
    return {"cpu_ms": 1000 * cpu / count, "wall_ms": 1000 * wall / count}


def links(tree: Path, into: Path) -> str:
    """A PYTHONPATH folder where `toolreel.*` are the tree's packages."""
    package = into / "toolreel"
    package.mkdir(parents=True)
    for name, folder in PACKAGES.items():
        (package / name).symlink_to(tree / folder, target_is_directory=True)
    return str(into)


def export(rev: str, into: Path) -> Path:
    """The tree at `rev`, written out by `git archive` (no worktree is registered)."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run_worker(
    path: str, url: str, count: int, in_flight: int, *, alias: bool, profile: str | None = None
) -> dict[str, float]:
    """Run one pass in a fresh interpreter on the tree at `path`."""
    env = {**os.environ, "PYTHONPATH": path}
    argv = [sys.executable, __file__, "--worker", url, "--sessions", str(count)]
    argv += ["--in-flight", str(in_flight), *(["--alias"] if alias else [])]
    argv += ["--profile-to", profile] if profile else []
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"worker failed ({path}, K={in_flight}):\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def load() -> str:
    """The machine's load averages (1, 5, 15 min)."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def compare(trees: dict[str, tuple[str, bool]], url: str, args: argparse.Namespace) -> None:
    """Run every tree at every K `reps` times (interleaved); print medians and ratios."""
    cpu: dict[tuple[str, int], list[float]] = {}
    wall: dict[tuple[str, int], list[float]] = {}
    print(f"load before: {load()}", flush=True)
    for rep in range(args.reps):
        for k in args.in_flight:
            count = max(args.sessions, k)
            for name, (path, alias) in trees.items():
                result = run_worker(path, url, count, k, alias=alias)
                cpu.setdefault((name, k), []).append(result["cpu_ms"])
                wall.setdefault((name, k), []).append(result["wall_ms"])
                print(
                    f"  rep {rep + 1} K={k:<3} {name:12} {result['cpu_ms']:6.2f} ms CPU "
                    f"{result['wall_ms']:6.2f} ms wall per session  (load {load()})",
                    flush=True,
                )
    print(f"load after: {load()}")
    print(
        f"\nclient CPU ms per one-round session, median of {args.reps} "
        f"({args.sessions} sessions, more where K is larger); ratio to K=1 of the same tree"
    )
    names = list(trees)
    print("| K | " + " | ".join(f"{name} | x K=1" for name in names) + " |")
    print("|---:|" + "---:|---:|" * len(names))
    for k in args.in_flight:
        cells = []
        for name in names:
            ms = statistics.median(cpu[(name, k)])
            base = statistics.median(cpu[(name, args.in_flight[0])])
            spread = f"{min(cpu[(name, k)]):.2f}-{max(cpu[(name, k)]):.2f}"
            cells.append(f"{ms:.2f} ({spread}) | {ms / base:.2f}")
        print(f"| {k} | " + " | ".join(cells) + " |")


def profile(path: str, url: str, args: argparse.Namespace) -> None:
    """Profile this tree at one K with cProfile; print the top of it by total time."""
    import pstats  # noqa: PLC0415

    k = args.profile
    with tempfile.NamedTemporaryFile(suffix=".prof") as out:
        result = run_worker(path, url, max(args.sessions, k), k, alias=False, profile=out.name)
        print(f"K={k}: {result['cpu_ms']:.2f} ms CPU per session under cProfile")
        pstats.Stats(out.name).sort_stats("tottime").print_stats(25)


def main() -> None:
    """Compare trees at each K, or (--worker) run one pass and print its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 10, 100, 500])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--base", default="bfd8293", help="a commit to compare with")
    parser.add_argument("--no-base", action="store_true", help="run this tree only")
    parser.add_argument("--alias", action="store_true", help="also run the base on httpx2")
    parser.add_argument("--profile", type=int, metavar="K", help="cProfile this tree at K")
    parser.add_argument("--worker", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        if args.alias:
            import httpx2  # noqa: PLC0415

            httpx2.alias_httpx()  # before toolreel (or anything) imports httpx
        import anyio  # noqa: PLC0415

        k = args.in_flight[0]
        print(json.dumps(anyio.run(worker, args.worker, args.sessions, k, args.profile_to)))
        return
    with tempfile.TemporaryDirectory() as scratch:
        now = links(ROOT, Path(scratch, "now"))
        trees: dict[str, tuple[str, bool]] = {}
        if not (args.no_base or args.profile):
            base = links(export(args.base, Path(scratch, "tree")), Path(scratch, "base"))
            trees[args.base] = (base, False)
            if args.alias:
                trees[f"{args.base}+httpx2"] = (base, True)
        trees["now"] = (now, False)
        env = {**os.environ, "PYTHONPATH": now}
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert server.stdout is not None and server.stdin is not None
        try:
            url = server.stdout.readline().decode().strip()
            if args.profile:
                profile(now, url, args)
            else:
                compare(trees, url, args)
        finally:
            server.stdin.close()
            server.wait(30)


if __name__ == "__main__":
    main()
