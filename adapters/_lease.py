"""Leases: one writer per session at a time, shared by the three journals.

A writer is a journal object in a process: `Owner` names it (host, pid and a
token made per journal object). `begin` takes a session's lease, every write
renews it, and a background heartbeat renews the leases a journal holds while
nothing is written (a long tool run); `release` and `close` give it up.

Another writer's lease is respected until it expires (`lease_seconds`, 30 s by
default), except that a lease of a process on this host that no longer runs is
taken over at once (a crashed process is resumed without waiting). A journal
object holds a session from `begin` until `release`: two Clients sharing one
journal object are two writers and cannot tell themselves apart otherwise, so a
second `begin` before a `release` is refused as well.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any

import attrs

from ._errors import SessionBusy

LEASE_SECONDS = 30.0


@attrs.frozen(kw_only=True)
class Owner:
    """Who holds a lease: a journal object (`token`) in process `pid` on `host`."""

    host: str
    pid: int
    token: str

    @classmethod
    def here(cls) -> Owner:
        """A new owner for a journal object of this process."""
        return cls(host=socket.gethostname(), pid=os.getpid(), token=uuid.uuid4().hex[:8])

    def __str__(self) -> str:
        """For people: `pid 1234 on host X (journal ab12cd34)`."""
        return f"pid {self.pid} on host {self.host} (journal {self.token})"

    def data(self) -> dict[str, Any]:
        """As JSON data."""
        return {"host": self.host, "pid": self.pid, "token": self.token}

    @classmethod
    def of(cls, data: dict[str, Any]) -> Owner:
        """Back from JSON data."""
        return cls(host=str(data["host"]), pid=int(data["pid"]), token=str(data["token"]))


def process_gone(owner: Owner) -> bool:
    """Whether `owner` is a process on this host that no longer runs."""
    if owner.host != socket.gethostname() or owner.pid == os.getpid():
        return False
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it runs, as another user
        return False
    return False


def check_free(
    session_id: str, me: Owner, holder: Owner | None, expires: float, now: float
) -> None:
    """Raise `SessionBusy` unless the session's lease may be taken by `me`."""
    if holder is None or holder == me or expires <= now or process_gone(holder):
        return
    raise SessionBusy(session_id, str(holder), max(expires - now, 0.0))


class Heartbeat:
    """A daemon thread renewing a journal's leases every third of a lease, while it lives."""

    def __init__(self, renew: Callable[[], None], interval: float) -> None:
        """Call `renew` (a bound method, held weakly) every `interval` seconds."""
        self._renew = weakref.WeakMethod(renew)
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start beating (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="toolreel-lease", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        """Renew until stopped or the journal is gone."""
        while not self._stop.wait(self._interval):
            renew = self._renew()
            if renew is None:
                return
            with contextlib.suppress(Exception):  # retried on the next beat or write
                renew()
            del renew

    def stop(self) -> None:
        """Stop beating."""
        self._stop.set()


def now() -> float:
    """Wall-clock seconds (leases are compared across processes)."""
    return time.time()
