"""README's examples type-check in a user's strict project.

Three sources, one mypy run: the README's own complete Python blocks (each as a
module of its own, so the README cannot drift from what type-checks),
tests/typing/readme_examples.py, which adds `assert_type` pins and the checks
that a wrongly typed hook or observer is refused, and
tests/typing/callbacks_examples.py: each API's typed callbacks and options, a
callback written for the other API refused.
"""

from __future__ import annotations

import re
from pathlib import Path

from mypy import api

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def readme_programs() -> list[str]:
    """The README's Python blocks that are whole programs (they import toolreel)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return [block for block in blocks if re.search(r"^from toolreel", block, re.M)]


def test_the_readme_examples_pass_mypy_strict_as_a_users_code(tmp_path: Path) -> None:
    """One mypy run (~7-10 s): core, Client, tools, hooks, agents and the testing plugin."""
    programs = readme_programs()
    assert len(programs) >= 4  # the core, Client, agent and testing examples
    files = []
    for number, block in enumerate(programs):
        path = tmp_path / f"readme_block_{number}.py"
        # README code leaves its own functions unannotated; their bodies are still checked.
        relaxed = "# mypy: allow-untyped-defs, allow-incomplete-defs, check-untyped-defs\n"
        path.write_text(relaxed + block, encoding="utf-8")
        files.append(str(path))
    report, errors, status = api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(HERE / "readme_examples.py"),
            str(HERE / "callbacks_examples.py"),
            *files,
        ]
    )
    assert (report, errors, status) == ("", "", 0)
