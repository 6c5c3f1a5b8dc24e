"""A user's strict project type-checks against toolreel's API.

One mypy run over tests/typing/readme_examples.py, which pins the types users
get (`assert_type`) and checks that a wrongly typed hook or observer is refused,
and tests/typing/callbacks_examples.py: each API's typed callbacks and options, a
callback written for the other API refused. (The README's and the docs' own
blocks go through mypy --strict in tests/docs/test_docs_blocks.py.)
"""

from __future__ import annotations

from pathlib import Path

from mypy import api

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def test_a_users_code_passes_mypy_strict() -> None:
    """One mypy run (~7-10 s): core, Client, tools, hooks, agents and the testing plugin."""
    report, errors, status = api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(HERE / "readme_examples.py"),
            str(HERE / "callbacks_examples.py"),
        ]
    )
    assert (report, errors, status) == ("", "", 0)
