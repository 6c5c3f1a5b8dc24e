"""Leases: one writer per session at a time, shared by the three journals.

A writer is a journal object in a process: `Owner` names it (host, pid and a
token made per journal object). `begin` takes a session's lease, every write
renews it, and a background heartbeat renews the leases a journal holds while
nothing is written (a long tool run); `release` and `close` give it up.

Inside one journal object, shared by several Clients, the session is held by
the one that began it: `begin` returns a `Lease`, and only that `Lease` gives
the session back (`release(lease)`; `Holds` keeps them). A Client refused at
`begin` has no lease, so it cannot release the session of the Client that
holds it. A session given back while steps of it are still unwritten (a
locked file, a lost connection) stays this journal's until they are written:
nobody else may write after them meanwhile.

Another writer's lease is respected until it expires (`lease_seconds`, 30 s by
default), except that a lease of a process on this host that no longer runs is
taken over at once (a crashed process is resumed without waiting). A journal
object holds a session from `begin` until `release`: a second `begin` before
the `release` (another Client sharing the object) is refused as well.

`begin` also refuses a session that has steps after `from_seq` (`check_current`): the
caller read the session before another writer added to it, and would write
steps under numbers already taken. The check and the taking are one atomic step:
no other writer may commit between the reading of the last step and the lease
taken (SQLite: one IMMEDIATE transaction; JSON lines: under the file's lock;
PostgreSQL: the lease first, then the reading, `PostgresJournal._take`). Else a
writer could add steps and give the session back in between, and the session be
taken at a reading they overtook (a Client would resume a turn that had ended).
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

from toolreel.core.record import Record, Value

from ._errors import SessionBusy

LEASE_SECONDS = 30.0


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Owner(Value):
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


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Lease(Record):
    """A session held by one holder (a Client, a run) of a journal: what `begin` returns and
    `release` takes. Compared by identity: only the one `begin` gave it to can give it back."""

    session_id: str


class Holds:
    """Which `Lease` holds each session of one journal object (one at a time; thread-safe)."""

    def __init__(self, owner: Owner) -> None:
        """No session held yet by `owner`'s holders."""
        self._owner = owner
        self._lock = threading.Lock()
        self._leases: dict[str, Lease] = {}

    def take(self, session_id: str) -> Lease:
        """A new lease on the session; `SessionBusy` if another holder of this journal has it."""
        with self._lock:
            if session_id in self._leases:
                raise SessionBusy(
                    session_id, f"{self._owner}, which began it and did not release it"
                )
            lease = self._leases[session_id] = Lease(session_id=session_id)
            return lease

    def give_back(self, lease: Lease) -> bool:
        """End `lease`'s hold; whether it held the session (a stale or foreign lease: no)."""
        with self._lock:
            if self._leases.get(lease.session_id) is not lease:
                return False
            del self._leases[lease.session_id]
            return True

    def __contains__(self, session_id: object) -> bool:
        """Whether a holder of this journal holds the session."""
        return session_id in self._leases

    def clear(self) -> None:
        """Every hold ended (the journal is closing)."""
        with self._lock:
            self._leases.clear()


def check_current(session_id: str, last_seq: int | None, from_seq: int) -> None:
    """Raise `SessionBusy` if the session has steps after `from_seq` (see the module docstring)."""
    if last_seq is not None and last_seq > from_seq:
        steps = (
            f"step {last_seq}" if last_seq == from_seq + 1 else f"steps {from_seq + 1}-{last_seq}"
        )
        raise SessionBusy(
            session_id, f"another writer, which wrote {steps} after this one read the session"
        )


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
