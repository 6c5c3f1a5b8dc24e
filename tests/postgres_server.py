"""A throwaway PostgreSQL server for the tests: Debian's binaries, a temporary directory.

`start()` runs `initdb` and `pg_ctl start` (as an unprivileged user when the tests run
as root: initdb refuses root), listening on 127.0.0.1 on a free port with a password
(scram), fsync off; `Server.stop()` stops it and removes the directory. `schema_dsn`
gives each test a schema of its own in that one server (through `search_path`), so
tests never see each other's sessions and no database is created per test.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

import attrs

PASSWORD = "pg-secret-4f1d9c"  # a throwaway server's, tested never to leak
USER = "toolreel"


@attrs.frozen
class Server:
    """A running server: its DSN (user, password, 127.0.0.1:port) and directory."""

    dsn: str
    directory: Path
    pg_ctl: str
    runner: tuple[str, ...]

    def stop(self) -> None:
        """Stop at once (no checkpoint: the data is thrown away) and remove the directory."""
        data = str(self.directory / "data")
        subprocess.run(
            [*self.runner, self.pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.directory, ignore_errors=True)


def binaries() -> tuple[str, str] | None:
    """`initdb` and `pg_ctl`: on PATH, else the newest under /usr/lib/postgresql/*/bin."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return initdb, pg_ctl
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.access(f"{folder}/initdb", os.X_OK) and os.access(f"{folder}/pg_ctl", os.X_OK):
            return f"{folder}/initdb", f"{folder}/pg_ctl"
    return None


def _runner() -> tuple[tuple[str, ...], int | None]:
    """How to run the server's commands: as is, or (as root) as `nobody` through runuser."""
    if os.geteuid() != 0:
        return (), None
    runuser = shutil.which("runuser")
    if runuser is None:
        raise RuntimeError("running as root and no runuser to start PostgreSQL as nobody")
    try:
        uid = pwd.getpwnam("nobody").pw_uid
    except KeyError:
        raise RuntimeError("running as root and no user nobody to start PostgreSQL as") from None
    return (runuser, "-u", "nobody", "--"), uid


def _free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start(*, durable: bool = False) -> Server:
    """A new server; RuntimeError (with initdb's or the server's log) if it cannot start.

    `durable`: commits are flushed to disk as in production (benchmarks); by default
    they are not (tests: the data is thrown away).
    """
    found = binaries()
    if found is None:
        raise RuntimeError("no initdb/pg_ctl (install Debian's postgresql)")
    initdb, pg_ctl = found
    runner, uid = _runner()
    directory = Path(tempfile.mkdtemp(prefix="toolreel-pg-"))
    if uid is not None:
        os.chown(directory, uid, -1)
    (directory / "pw").write_text(PASSWORD)
    if uid is not None:
        os.chown(directory / "pw", uid, -1)
    data, port, log = directory / "data", _free_port(), str(directory / "log")
    settings = _options(directory, port, durable=durable)
    auth = ["--auth-host=scram-sha-256", "--auth-local=trust", f"--pwfile={directory / 'pw'}"]
    steps = [
        [*runner, initdb, "-D", str(data), "-U", USER, *auth, "--no-sync", "-E", "UTF8"],
        [*runner, pg_ctl, "-D", str(data), "-l", log, "-w", "-o", settings, "start"],
    ]
    for command in steps:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = directory / "log"
            detail = done.stderr + (log.read_text() if log.exists() else "")
            shutil.rmtree(directory, ignore_errors=True)
            raise RuntimeError(f"{Path(command[len(runner)]).name} failed: {detail[-2000:]}")
    dsn = f"postgresql://{USER}:{quote(PASSWORD)}@127.0.0.1:{port}/postgres"
    return Server(dsn=dsn, directory=directory, pg_ctl=pg_ctl, runner=runner)


def _options(directory: Path, port: int, *, durable: bool) -> str:
    """The server's settings: 127.0.0.1 and a socket in its directory; for throwaway data
    unless `durable`."""
    settings = {
        "listen_addresses": "'127.0.0.1'",
        "port": str(port),
        "unix_socket_directories": f"'{directory}'",
        "max_connections": "100",
        "shared_buffers": "64MB",
    }
    if not durable:
        settings.update(fsync="off", synchronous_commit="off", full_page_writes="off")
    return " ".join(f"-c {key}={value}" for key, value in settings.items())


def schema_dsn(dsn: str, schema: str) -> str:
    """`dsn` with `search_path` set to `schema` (created if missing): a namespace per test."""
    import psycopg  # noqa: PLC0415 - only where a server runs

    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    return f"{dsn}?options={quote(f'-csearch_path={schema}')}"
