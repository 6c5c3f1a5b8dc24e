"""The `toolreel` command given bytes that are not UTF-8 (argv and stdin decode them with
surrogateescape): one line on stderr, exit 2, no traceback, no session begun (issue 20,
item 3). Run as real processes, so argv is decoded as a shell passes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolreel.adapters import SQLiteJournal
from toolreel.shell import replay

TOOLREEL = Path(sys.executable).with_name("toolreel")
BAD = b"hello \xff there"
#: A locale whose stdin Python decodes strictly would make a bad byte a traceback; toolreel
#: reads stdin itself with surrogateescape, as argv, whatever the locale.
ENV = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONUTF8": "0"}


def toolreel(*args: str | bytes | Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """Run the console script with these argv bytes (the test model answers)."""
    argv = [os.fsencode(arg) for arg in (TOOLREEL, *args)]
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=60, check=False, env=ENV)


def refused(done: subprocess.CompletedProcess[bytes], field: str) -> None:
    """Exit 2 with one `error:` line naming the field and the byte, and no traceback."""
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("error: ") and f"{field}=" in line and "\\udcff" in line


def sessions(path: Path) -> list[str]:
    """The sessions the journal holds (none if there is no journal)."""
    if not path.exists():
        return []
    journal = SQLiteJournal(path)
    try:
        return journal.sessions()
    finally:
        journal.close()


def test_a_prompt_argument_that_is_not_utf8_is_refused_before_a_session_begins(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.db"
    refused(toolreel("run", "--model", "test", "--journal", path, BAD), "prompt")
    assert sessions(path) == []


def test_a_prompt_on_stdin_that_is_not_utf8_is_refused_alike(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    refused(toolreel("run", "--model", "test", "--journal", path, "-", stdin=BAD), "prompt")
    assert sessions(path) == []


@pytest.mark.parametrize(("option", "field"), [("--system", "system_prompt"), ("--session", "")])
def test_an_option_that_is_not_utf8_is_refused(tmp_path: Path, option: str, field: str) -> None:
    path = tmp_path / "j.db"
    done = toolreel("run", "--model", "test", "--journal", path, option, b"x\xff", "hi")
    refused(done, field or "session_id")
    assert sessions(path) == []


def test_chat_refuses_such_a_line_and_goes_on_with_the_next(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    done = toolreel("chat", "--model", "test", "--journal", path, stdin=BAD + b"\nsecond\n")
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "Traceback" not in err
    assert "error: prompt='hello \\udcff there' is not allowed" in err
    (session_id,) = sessions(path)
    journal = SQLiteJournal(path)
    try:
        session = replay(journal, session_id)
    finally:
        journal.close()
    assert [turn.prompt for turn in session.turns] == ["second"]  # type: ignore[union-attr]
