"""The public constructors type-check in a user's strict project (tests/core/typing_check.py)."""

from __future__ import annotations

from pathlib import Path

from mypy import api

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def test_a_users_file_calling_the_core_constructors_passes_mypy_strict() -> None:
    report, errors, status = api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(HERE / "typing_check.py"),
        ]
    )
    assert (report, errors, status) == ("", "", 0)
