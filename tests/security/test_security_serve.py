"""`toolreel serve` off loopback: it warns, and every request must carry the access token.

Test servers listen on 127.0.0.1 only (a house rule), so the "off loopback"
servers here run `toolreel serve --host 0.0.0.0` with `listening` bound to
127.0.0.1 whatever the host: the command sees and decides on 0.0.0.0, as a real
one would. Also: a token given by TOOLREEL_TOKEN is never printed; a token
unfit to be one stops the command before it serves; `--allowed-host` and
`--max-body` reach the app; on loopback nothing changes.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner

pytest.importorskip("uvicorn", reason="toolreel serve needs uvicorn: pip install 'toolreel[web]'")

from toolreel.cli import cli

#: `toolreel serve`, listening on 127.0.0.1 whatever --host says.
ON_LOOPBACK_ONLY = (
    "import socket, sys\n"
    "from toolreel.cli import _serve, main\n"
    "_serve.listening = lambda host, port: socket.create_server(('127.0.0.1', port))\n"
    "sys.exit(main())\n"
)
#: Variables that would make `serve` talk to a real model, or bring a token.
DROPPED = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
QUESTION = {"message": "What is 25 plus 17?"}


class Serving:
    """A running `toolreel serve`: what it printed, its port, its process."""

    def __init__(self, args: list[str], folder: Path, env: dict[str, str] | None = None) -> None:
        """Start it and wait for its first line."""
        environment = {
            k: v
            for k, v in os.environ.items()
            if k not in DROPPED and not k.startswith("TOOLREEL_")
        }
        environment.update(env or {})
        self.process = subprocess.Popen(
            [sys.executable, "-c", ON_LOOPBACK_ONLY, "serve", "--port", "0", *args],
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
            cwd=folder,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        first = self.line()
        port = re.search(r" on http://\S+:(\d+)$", first)
        assert port, first
        self.url = f"http://127.0.0.1:{port[1]}"

    def _read(self) -> None:
        """Keep the server's stderr lines."""
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))

    def line(self) -> str:
        """The next line it printed."""
        line = self.lines.get(timeout=60)
        self.seen.append(line)
        return line

    def stop(self) -> list[str]:
        """Stop it (SIGTERM); every line it printed."""
        self.process.terminate()
        self.process.wait(timeout=30)
        self.reader.join(timeout=30)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return self.seen


def ask(url: str, **extra: object) -> httpx2.Response:
    """POST /api/events with the calculator question."""
    return httpx2.post(f"{url}/api/events", json=QUESTION, timeout=30, **extra)  # type: ignore[arg-type]


def test_off_loopback_a_token_is_made_printed_once_and_required(tmp_path: Path) -> None:
    served = Serving(["--host", "0.0.0.0"], tmp_path)
    try:
        assert served.seen[0].startswith("toolreel serving the offline scripted calculator model")
        assert " on http://0.0.0.0:" in served.seen[0]
        warning = served.line()
        assert warning.startswith("warning: serving beyond this machine (every address")
        link = served.line()
        found = re.fullmatch(r"open (http://127\.0\.0\.1:\d+/)\?token=(\S+) \(or send .*\)", link)
        assert found, link
        page, token = found[1], found[2]
        assert len(token) >= 40

        refused = httpx2.get(f"{served.url}/api/info")
        assert refused.status_code == 401 and token not in refused.text
        assert ask(served.url).status_code == 401
        bearer = {"authorization": f"Bearer {token}"}
        assert httpx2.get(f"{served.url}/api/info", headers=bearer).status_code == 200
        answered = ask(served.url, headers=bearer)
        assert answered.status_code == 200 and "42" in answered.text

        linked = httpx2.get(f"{page}?token={token}", follow_redirects=True)  # as a browser would
        assert linked.status_code == 200 and linked.headers["content-type"].startswith("text/html")
        assert [r.status_code for r in linked.history] == [303]
        assert "HttpOnly" in linked.history[0].headers["set-cookie"]

        # Listening on every address, it answers to any address, but to no other name.
        for host, status in [("192.168.1.7:8000", 200), ("[fe80::1]", 200), ("rebind.test", 400)]:
            answer = httpx2.get(f"{served.url}/api/info", headers={**bearer, "host": host})
            assert answer.status_code == status, host
    finally:
        printed = served.stop()
    assert [line for line in printed if token in line] == [link]  # once, in the start-up line


def test_a_token_given_by_the_environment_is_required_and_never_printed(tmp_path: Path) -> None:
    token = "given-token-0123456789-abcdef"
    served = Serving(["--host", "0.0.0.0"], tmp_path, env={"TOOLREEL_TOKEN": token})
    try:
        assert served.line().startswith("warning: serving beyond this machine")
        assert "the token given (--token or TOOLREEL_TOKEN)" in served.line()
        assert httpx2.get(f"{served.url}/api/info").status_code == 401
        bearer = {"authorization": f"Bearer {token}"}
        assert httpx2.get(f"{served.url}/api/info", headers=bearer).status_code == 200
    finally:
        printed = served.stop()
    assert not any(token in line for line in printed)


def test_a_token_unfit_to_be_one_stops_serve_before_it_serves(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", ON_LOOPBACK_ONLY, "serve", "--port", "0", "--token", "hunter2"],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k not in DROPPED},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: token='***' is not allowed: an access token is at least")
    assert "hunter2" not in done.stderr
    assert "serving" not in done.stderr


def test_on_loopback_no_token_and_the_host_and_body_flags_reach_the_app(tmp_path: Path) -> None:
    served = Serving(["--allowed-host", "agent.test", "--max-body", "100"], tmp_path)
    try:
        assert httpx2.get(f"{served.url}/api/info").status_code == 200  # no token on loopback
        named = httpx2.get(f"{served.url}/api/info", headers={"host": "agent.test:8000"})
        assert named.status_code == 200
        other = httpx2.get(f"{served.url}/api/info", headers={"host": "rebind.test:8000"})
        assert other.status_code == 400 and "not served here" in other.json()["error"]
        assert ask(served.url).status_code == 200  # 35 bytes
        large = httpx2.post(
            f"{served.url}/api/events", json={**QUESTION, "pad": "x" * 100}, timeout=30
        )
        assert large.status_code == 413
        assert json.loads(large.text) == {
            "error": "the request body is larger than the limit of 100 bytes"
        }
    finally:
        printed = served.stop()
    assert not any("warning" in line or "token" in line for line in printed)


def test_help_tells_the_access_flags() -> None:
    listing = CliRunner().invoke(cli, ["serve", "--help"]).output
    for flag in ("--allowed-host NAME", "--token TOKEN", "--max-body BYTES", "--cors-origin"):
        assert flag in listing
    assert "10 MiB" in listing
