"""Benchmark: the cost of a session, for apps that open many (run on demand).

Opens S live sessions one after another (default 1,000), each a `Client` entered
that runs one round against a scripted OpenAI-compatible server on 127.0.0.1,
all kept open to the end, and reports new sessions per second and the memory
each open session holds: RSS (what the process really holds, OpenSSL's CA
bundles included) and tracemalloc (Python objects only), both after one warm-up
session so that imports and one-time setup are left out. The server runs in
its own process, so its connections do not count.

Each tree runs in fresh interpreters (one timed pass with RSS, one tracemalloc
pass), through this venv's Python with PYTHONPATH pointing at a folder that
links the tree's core/, adapters/, shell/ as toolreel.*; this tree and a base
alternate, and the ratios are printed. The base is a checkout (a folder), or a
git revision of this repository (default: 495750a), unpacked into a temporary
folder with `git archive`. Goal (issue 10): >= 4x the sessions/s, <= 1/15 the
memory per session.

    python tests/bench/bench_sessions.py [--sessions 1000] [--reps 1] [--base DIR|REV]
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"core": "core", "adapters": "adapters", "shell": "shell", "testing": "shell/testing"}
SERVER = """
import sys
from toolreel.shell.scripted import ScriptedServer, text
with ScriptedServer(lambda request: text("hello there")) as server:
    print(server.url, flush=True)
    sys.stdin.read()
"""


def rss() -> int:
    """This process's resident memory in bytes (Linux /proc; else the peak from getrusage)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    import resource  # noqa: PLC0415 - only off Linux

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def session(options: Any, done: Any, *, task_status: Any) -> None:
    """One session in its own task, as a web backend runs one per chat: a round, then idle."""
    from toolreel.shell import Client  # noqa: PLC0415 - the tree under test

    async with Client(options) as client:
        await client.query("hi")
        await client.wait()
        task_status.started()
        await done.wait()


async def worker(url: str, count: int, traced: bool) -> dict[str, float]:
    """One pass: a warm-up session, then `count` live sessions; seconds and bytes per session."""
    import anyio  # noqa: PLC0415

    from toolreel.shell import AgentOptions  # noqa: PLC0415 - the tree under test

    options = AgentOptions(model="bench", base_url=url, api_key="sk-bench")
    async with anyio.create_task_group() as warm:
        done = anyio.Event()
        await warm.start(session, options, done)
        done.set()
    gc.collect()
    if traced:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0] if traced else rss()
    async with anyio.create_task_group() as tasks:
        done = anyio.Event()
        started = time.perf_counter()
        for _ in range(count):  # one after another; every one stays open
            await tasks.start(session, options, done)
        seconds = time.perf_counter() - started
        gc.collect()
        after = tracemalloc.get_traced_memory()[0] if traced else rss()
        done.set()
    return {"per_s": count / seconds, "bytes": (after - before) / count}


def links(tree: Path, into: Path) -> str:
    """A PYTHONPATH folder where `toolreel.*` are the tree's packages."""
    package = into / "toolreel"
    package.mkdir(parents=True)
    for name, folder in PACKAGES.items():
        (package / name).symlink_to(tree / folder, target_is_directory=True)
    return str(into)


def base_tree(base: str, scratch: Path) -> Path:
    """The base to compare with: the folder `base` names, else that revision unpacked here."""
    if Path(base).is_dir():
        return Path(base)
    tree = scratch / "base-tree"
    tree.mkdir()
    folders = sorted({folder.split("/")[0] for folder in PACKAGES.values()})
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", base, *folders],
        capture_output=True,
        check=True,
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as unpacked:
        unpacked.extractall(tree, filter="data")
    return tree


def run_worker(path: str, url: str, count: int, traced: bool) -> dict[str, float]:
    """Run one pass in a fresh interpreter on the tree at `path`."""
    env = {**os.environ, "PYTHONPATH": path}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [sys.executable, __file__, "--worker", url, "--sessions", str(count)]
    done = subprocess.run(
        [*argv, *(["--traced"] if traced else [])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def compare(trees: dict[str, str], url: str, count: int, reps: int) -> None:
    """Run every tree `reps` times (alternating) and print medians and ratios."""
    speed: dict[str, list[float]] = {name: [] for name in trees}
    rss_bytes: dict[str, list[float]] = {name: [] for name in trees}
    traced: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(reps):
        for name, path in trees.items():
            timed = run_worker(path, url, count, traced=False)
            speed[name].append(timed["per_s"])
            rss_bytes[name].append(timed["bytes"])
            traced[name].append(run_worker(path, url, count, traced=True)["bytes"])
            print(
                f"  {name}: {timed['per_s']:.0f} sessions/s, {timed['bytes'] / 1024:.0f} KB RSS "
                f"and {traced[name][-1] / 1024:.0f} KB traced per open session",
                flush=True,
            )
    med = {
        name: (statistics.median(speed[name]), statistics.median(rss_bytes[name])) for name in trees
    }
    traced_med = {name: statistics.median(traced[name]) for name in trees}
    print(f"{count} live sessions, median of {reps}:")
    for name in trees:
        per_s, held = med[name]
        print(
            f"  {name:5} {per_s:7.0f} sessions/s  {held / 1024:7.1f} KB RSS  "
            f"{traced_med[name] / 1024:7.1f} KB traced  per open session"
        )
    new, base = med["new"], med["base"]
    print(f"  sessions/s: {new[0] / base[0]:.1f}x the base (goal >= 4x)")
    print(
        f"  memory per open session: 1/{base[1] / max(new[1], 1):.1f} of the base by RSS, "
        f"1/{traced_med['base'] / max(traced_med['new'], 1):.1f} by tracemalloc (goal <= 1/15)"
    )


def main() -> None:
    """Compare this tree with the base, or (--worker) run one pass and print its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument(
        "--base", default="495750a", help="a checkout, or a git revision (default: 495750a)"
    )
    parser.add_argument("--worker", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        import anyio  # noqa: PLC0415

        print(json.dumps(anyio.run(worker, args.worker, args.sessions, args.traced)))
        return
    with tempfile.TemporaryDirectory() as scratch:
        trees = {
            "base": links(base_tree(args.base, Path(scratch)), Path(scratch, "base")),
            "new": links(ROOT, Path(scratch, "new")),
        }
        env = {**os.environ, "PYTHONPATH": trees["new"]}
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert server.stdout is not None and server.stdin is not None
        try:
            url = server.stdout.readline().decode().strip()
            compare(trees, url, args.sessions, args.reps)
        finally:
            server.stdin.close()
            server.wait(30)


if __name__ == "__main__":
    main()
