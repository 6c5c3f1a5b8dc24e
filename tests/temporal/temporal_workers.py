"""Helpers of tests/temporal and tests/bench/scale_temporal.py: free ports, the dev server's
binary, and `toolreel worker` processes with this folder's tools."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def temporal_binary() -> str | None:
    """The installed `temporal` CLI: beside this Python, else on PATH."""
    beside = Path(sys.executable).with_name("temporal")
    return str(beside) if beside.exists() else shutil.which("temporal")


def worker_command(address: str, base_url: str, queue: str) -> list[str]:
    """`toolreel worker` on `queue`, with the test tools, against a scripted model."""
    return [
        str(Path(sys.executable).with_name("toolreel")),
        "worker",
        "--temporal",
        address,
        "--task-queue",
        queue,
        "--base-url",
        base_url,
        "--model",
        "scripted",
        "--api-key",
        "scripted-key",
        "--tools",
        "temporal_tools:TOOLS",
        "--sticky-seconds",
        "0.5",
    ]


def start_worker(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A worker process (in tests/temporal, where its tools module is), its output in `log`."""
    with log.open("ab") as out:
        return subprocess.Popen(
            command, cwd=HERE, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
