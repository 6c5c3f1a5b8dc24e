"""The README is a front page: the two commands, a short tour, and links that lead somewhere.

Its Python blocks run as printed and pass `mypy --strict` with the docs site's
(tests/docs/test_docs_blocks.py takes README.md as one of its pages).
"""

from __future__ import annotations

import re
from pathlib import Path

from pages import python_blocks

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: A front page, not a manual (issue 23): what is longer goes to docs/.
MOST_LINES = 250


def test_readme_has_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert "make demo" in text
    assert "make test" in text


def test_ci_runs_the_test_command_the_readme_names() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_is_a_front_page() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= MOST_LINES


def test_readme_points_at_the_docs_site_and_the_examples() -> None:
    text = README.read_text(encoding="utf-8")
    assert "make docs" in text
    assert "examples/first_agent.py" in text
    assert (ROOT / "examples" / "first_agent.py").exists()


def test_every_link_of_the_readme_leads_to_a_file_of_the_repository() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    local = [link for link in links if "://" not in link]
    assert len(local) >= 15  # the feature table links into every guide
    assert [link for link in local if not (ROOT / link).exists()] == []


def test_readme_shows_a_first_agent_and_a_pydantic_tool_and_output() -> None:
    blocks = python_blocks("README.md")
    assert any("ScriptedServer(calculator)" in b and "verify(" in b for b in blocks)
    assert any("(BaseModel)" in b and "@tool" in b and "OutputTool.of(" in b for b in blocks)
