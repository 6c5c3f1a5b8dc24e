"""JSONLJournal: sessions as JSON lines in one file — human-readable and diffable.

Each line is `{"session", "kind": "config" | "step" | "origin", ..., "digest"}`, the
digest (last) a checksum of the line without it, checked on read; `append`
writes its lines, flushes and fsyncs before returning, holding an exclusive
`flock` on the file so writers in several processes never interleave.

A crash can leave a torn last line (no newline, or not JSON): opening the
file sets it aside into `<file>.torn-<offset>` (no byte is lost), cuts it off
and logs a warning, so every complete line stays readable and appends go on
cleanly. Session leases (one writer per session, see `_lease.py`) live in the
sidecar `<file>.leases`, read and written under the same lock, and removed
when no session is held.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from ._errors import JournalCorrupt, JournalUnavailable, SessionNotFound
from ._journal import (
    Damage,
    JournalEntry,
    SessionConfig,
    Step,
    body_digest,
    config_data,
    config_of,
    decoded_step,
    effect_record,
)
from ._lease import LEASE_SECONDS, Heartbeat, Holds, Lease, Owner, check_current, check_free, now
from ._origin import SessionOrigin, origin_data, stored_origin
from ._serde import event_data

if sys.platform != "win32":  # Windows has no flock: one writing process per file there
    import fcntl

log = logging.getLogger("toolreel.journal")
_DIGEST = b',"digest":"'


def _line(data: dict[str, Any]) -> bytes:
    """One JSON line with its digest as the last field."""
    body = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    digest = body_digest(body.decode())
    return body[:-1] + _DIGEST + digest.encode() + b'"}\n'


def _checked(raw: bytes, data: dict[str, Any]) -> bool:
    """Whether a parsed line matches its digest (a line without one is not checked)."""
    digest = data.pop("digest", None)
    if digest is None:
        return True
    cut = raw.rstrip(b"\n")
    suffix = _DIGEST + str(digest).encode() + b'"}'
    if cut.endswith(suffix):
        body = cut[: -len(suffix)] + b"}"
    else:  # rewritten by another tool: compare the canonical form
        body = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    return body_digest(body.decode()) == str(digest)


class JSONLJournal:
    """A journal in the JSON-lines file at `path` (created if missing)."""

    def __init__(self, path: str | Path, *, lease_seconds: float = LEASE_SECONDS) -> None:
        """Open the file for appending (a torn last line is set aside first)."""
        self.path = Path(path)
        self.lease_seconds = lease_seconds
        self.owner = Owner.here()
        self._lock = threading.Lock()
        self._holds = Holds(self.owner)  # which of our Clients holds each session
        self._leased: dict[str, float] = {}  # session -> when our lease (in the sidecar) runs out
        self._heartbeat = Heartbeat(self.heartbeat, lease_seconds / 3)
        if self.path.is_dir():
            raise JournalUnavailable(f"cannot open journal {self.path}: it is a directory")
        try:
            self._file: IO[bytes] = self.path.open("ab")
        except OSError as exc:
            raise JournalUnavailable(f"cannot open journal {self.path}: {exc}") from exc
        try:
            with self._locked():
                self._cut_torn_tail()
        except BaseException:
            self._file.close()
            raise

    def __repr__(self) -> str:
        """Where the journal is."""
        return f"JSONLJournal({str(self.path)!r})"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold this object's lock and the file's `flock` (other processes wait)."""
        with self._lock:
            if sys.platform == "win32":
                yield
                return
            try:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_EX)
            except (OSError, ValueError) as exc:
                raise JournalUnavailable(f"cannot lock journal {self.path}: {exc}") from exc
            try:
                yield
            finally:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)

    def _cut_torn_tail(self) -> None:
        """Set a torn last line aside into `<file>.torn-<offset>` and cut it off."""
        with self.path.open("rb") as file:
            first = file.readline()
            if first.endswith(b"\n") and not _parses(first):
                raise JournalCorrupt(str(self.path), "line 1 is not a journal line (not JSON)")
            size = file.seek(0, os.SEEK_END)
            if not size:
                return
            start = max(size - 65536, 0)
            while True:  # find where the last line starts
                file.seek(start)
                chunk = file.read(size - start)
                cut = chunk.rstrip(b"\n").rfind(b"\n")
                if cut >= 0 or start == 0:
                    break
                start = max(start - (1 << 20), 0)
            offset = start + cut + 1 if cut >= 0 else 0
            last = chunk[cut + 1 :] if cut >= 0 else chunk
        if last.endswith(b"\n") and _parses(last):
            return
        torn = self.path.with_name(f"{self.path.name}.torn-{offset}")
        try:
            torn.write_bytes(last)
            os.truncate(self.path, offset)
        except OSError as exc:
            raise JournalUnavailable(f"cannot set aside torn line of {self.path}: {exc}") from exc
        log.warning(
            "%s: torn last line at byte offset %d (%d bytes, from a crash) set aside into %s",
            self.path,
            offset,
            len(last),
            torn,
        )

    # --- leases ------------------------------------------------------------------------

    @property
    def _leases_path(self) -> Path:
        """The sidecar file holding the leases."""
        return self.path.with_name(self.path.name + ".leases")

    def _leases(self) -> dict[str, Any]:
        """The leases on record (under `_locked`); a damaged sidecar counts as none."""
        try:
            data = orjson.loads(self._leases_path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save_leases(self, leases: dict[str, Any]) -> None:
        """Write the leases back (or remove the sidecar when there are none)."""
        try:
            if leases:
                self._leases_path.write_bytes(orjson.dumps(leases))
            else:
                self._leases_path.unlink(missing_ok=True)
        except OSError as exc:
            raise JournalUnavailable(f"cannot write leases of {self.path}: {exc}") from exc

    def _take(self, session_id: str) -> None:
        """Take or renew the session's lease (under `_locked`); `SessionBusy` if held."""
        if self._leased.get(session_id, 0.0) - now() > self.lease_seconds / 2:
            return  # ours for a while yet: nobody else may have taken it
        leases = self._leases()
        lease = leases.get(session_id)
        holder = Owner.of(lease["owner"]) if lease else None
        check_free(session_id, self.owner, holder, lease["expires"] if lease else 0.0, now())
        expires = now() + self.lease_seconds
        leases[session_id] = {"owner": self.owner.data(), "expires": expires}
        self._save_leases(leases)
        self._leased[session_id] = expires
        self._heartbeat.start()

    def heartbeat(self) -> None:
        """Renew every lease this journal holds (the heartbeat thread calls this)."""
        with self._locked():
            for session_id in list(self._leased):
                self._take(session_id)

    def release(self, lease: Lease) -> None:
        """Give the session `lease` holds back."""
        if self._holds.give_back(lease):
            with self._locked():
                self._drop_lease(lease.session_id)

    def _drop_lease(self, session_id: str) -> None:
        """Delete the session's lease if it is ours and none of our holders took it again
        (under `_locked`)."""
        if session_id in self._holds or self._leased.pop(session_id, None) is None:
            return
        leases = self._leases()
        lease = leases.get(session_id)
        if lease and lease.get("owner") == self.owner.data():
            del leases[session_id]
            self._save_leases(leases)

    # --- writing -----------------------------------------------------------------------

    def _write(self, session_id: str, lines: list[dict[str, Any]]) -> None:
        """Append lines durably, holding (or taking) the session's lease."""
        with self._locked():
            self._append_lines(session_id, lines)

    def _append_lines(self, session_id: str, lines: list[dict[str, Any]]) -> None:
        """`_write`, under `_locked`."""
        text = b"".join(_line(line) for line in lines)
        self._take(session_id)
        if text:
            try:
                self._file.write(text)
                self._file.flush()
                os.fsync(self._file.fileno())
            except OSError as exc:
                raise JournalUnavailable(f"cannot write journal {self.path}: {exc}") from exc

    def begin(self, session_id: str, config: SessionConfig, *, from_seq: int = 0) -> Lease:
        """Take the session's lease; record the config in force after `from_seq` (if new).

        A session with steps after `from_seq` is refused (`_lease.check_current`).
        """
        lease = self._holds.take(session_id)
        try:
            with self._locked():
                latest, last = self._latest(session_id)
                check_current(session_id, last, from_seq)
                line = {"session": session_id, "kind": "config", "from_seq": from_seq}
                lines = [] if latest == config else [{**line, "config": config_data(config)}]
                self._append_lines(session_id, lines)
        except BaseException:
            self._holds.give_back(lease)
            with contextlib.suppress(JournalUnavailable), self._locked():
                self._drop_lease(session_id)  # one it had before, now that nothing holds it
            raise
        return lease

    def _latest(self, session_id: str) -> tuple[SessionConfig | None, int | None]:
        """The session's latest config and its last step's number, if it has them."""
        config, last = None, None
        for line in self._lines():
            if line.get("session") != session_id:
                continue
            if line.get("kind") == "config":
                config = line
            elif line.get("kind") == "step" and isinstance(line.get("seq"), int):
                last = max(last or 0, line["seq"])
        return (_config(self.path, session_id, config) if config else None), last

    def configs(self, session_id: str) -> list[tuple[int, SessionConfig]]:
        """The session's configs with the step after which each applies."""
        found = []
        for line in self._lines():
            if line.get("session") == session_id and line.get("kind") == "config":
                found.append((line.get("from_seq", 0), _config(self.path, session_id, line)))
        if not found:
            raise SessionNotFound(session_id, str(self.path))
        return found

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Record the steps."""
        self._write(
            session_id,
            [
                {
                    "session": session_id,
                    "kind": "step",
                    "seq": step.seq,
                    "event": event_data(step.event),
                    "effects": [effect_record(e) for e in step.effects],
                }
                for step in steps
            ],
        )

    def append_entries(self, session_id: str, entries: Sequence[JournalEntry]) -> None:
        """Record steps given in their recorded form."""
        self._write(
            session_id,
            [
                {
                    "session": session_id,
                    "kind": "step",
                    "seq": item.seq,
                    "event": event_data(item.event),
                    "effects": list(item.effects),
                }
                for item in entries
            ],
        )

    def set_origin(self, session_id: str, origin: SessionOrigin) -> None:
        """Record where the session came from (an `origin` line; older readers skip it)."""
        line = {"session": session_id, "kind": "origin", "origin": origin_data(origin)}
        self._write(session_id, [line])

    def origin(self, session_id: str) -> SessionOrigin | None:
        """Where the session came from (its last `origin` line), if it was forked or rerun."""
        found = None
        for line in self._lines():
            if line.get("session") == session_id and line.get("kind") == "origin":
                found = line.get("origin")
        if found is None:
            return None
        return stored_origin(str(self.path), session_id, found)

    def flush(self) -> None:
        """Nothing is kept back: each append is written (or fails) at once."""

    # --- reading -----------------------------------------------------------------------

    def _raw_lines(self) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
        """Every complete line: its number, text and data; one that is not JSON raises."""
        try:
            file = self.path.open("rb")
        except OSError as exc:
            raise JournalUnavailable(f"cannot read journal {self.path}: {exc}") from exc
        with file:
            for number, raw in enumerate(file, start=1):
                if not raw.endswith(b"\n"):
                    return  # torn by a writer that crashed since we opened
                try:
                    data = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise JournalCorrupt(str(self.path), f"line {number} is not JSON") from exc
                if not isinstance(data, dict) or not isinstance(data.get("session"), str):
                    raise JournalCorrupt(str(self.path), f"line {number} is not a journal line")
                yield number, raw, data

    def _lines(self) -> Iterator[dict[str, Any]]:
        """Every complete line's data (digests not checked)."""
        for _, _, data in self._raw_lines():
            data.pop("digest", None)
            yield data

    def config(self, session_id: str) -> SessionConfig:
        """The session's latest config."""
        return self.configs(session_id)[-1][1]

    def entries(self, session_id: str, *, damage: Damage | None = None) -> Iterator[JournalEntry]:
        """The session's steps in order (a line failing its digest is told to `damage`)."""
        path = str(self.path)
        for _, raw, line in self._raw_lines():
            if line["session"] != session_id or line.get("kind") != "step":
                continue
            legacy = "digest" not in line
            intact = _checked(raw, line)
            data = [line.get("seq"), line.get("event"), line.get("effects")]
            item = decoded_step(path, session_id, data, legacy=legacy)
            if not intact and damage is not None:
                damage.edited(path, session_id, item.seq, item.seq)
            yield item

    def sessions(self) -> list[str]:
        """Session ids, oldest first."""
        seen: dict[str, None] = {}
        for line in self._lines():
            seen.setdefault(line["session"], None)
        return list(seen)

    def close(self) -> None:
        """Give up the leases and close the file."""
        self._heartbeat.stop()
        self._holds.clear()
        try:
            with self._locked():
                for session_id in list(self._leased):
                    self._drop_lease(session_id)
        finally:
            with self._lock:
                self._file.close()


def _config(path: Path, session_id: str, line: dict[str, Any]) -> SessionConfig:
    """The config a config line holds; `JournalCorrupt` if it does not decode."""
    try:
        return config_of(line["config"])
    except Exception as exc:
        raise JournalCorrupt(
            str(path), f"undecodable config ({exc})", session_id=session_id
        ) from exc


def _parses(line: bytes) -> bool:
    """Whether a line is a journal line (a JSON object naming its session)."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(data, dict) and isinstance(data.get("session"), str)
