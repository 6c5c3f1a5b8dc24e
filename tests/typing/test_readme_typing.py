"""README's examples type-check in a user's strict project (tests/typing/readme_examples.py)."""

from __future__ import annotations

from pathlib import Path

from mypy import api

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def test_the_readme_examples_pass_mypy_strict_as_a_users_code() -> None:
    """One mypy run (~7-10 s): core, Client, tools, hooks, agents and the testing plugin."""
    report, errors, status = api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(HERE / "readme_examples.py"),
        ]
    )
    assert (report, errors, status) == ("", "", 0)
