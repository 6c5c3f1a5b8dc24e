"""Every Python block of the docs site (docs/**/*.md) and README.md runs or is type-checked.

A block is one of:
- an example included whole (`--8<-- "examples/NAME.py"`): tests/test_examples.py runs it;
- preceded by `<!-- docs-test: types -->`: it needs what a test cannot have (a key, a real
  server, Temporal), so it is only type-checked;
- preceded by `<!-- docs-test: pytest -->`: a test module of a user's suite, run by pytest;
- anything else: a program, executed here in a temporary folder with no provider key
  (a block that needs a model starts the stand-in itself), and its `# ...` comments after a
  `print` are what it prints.
Every block but the included examples goes through one `mypy --strict` run, as a user's
own module.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(?:<!-- docs-test: (\w+) -->\n)?```python[^\n]*\n(.*?)```", re.S)
INCLUDED = re.compile(r'\A--8<-- "examples/\w+\.py"\s*\Z')


@attrs.frozen
class Block:
    """A Python block of a page: where it is, how it is tested, its code."""

    page: str
    number: int
    kind: str
    code: str

    @property
    def name(self) -> str:
        """`page.md#N` for test ids and messages."""
        return f"{self.page}#{self.number}"


def blocks() -> list[Block]:
    """Every Python block of every page, in page order."""
    found = []
    for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        page = str(path.relative_to(ROOT))
        for number, match in enumerate(BLOCK.finditer(path.read_text(encoding="utf-8")), 1):
            kind, code = match.group(1) or "run", match.group(2)
            if INCLUDED.match(code):
                kind = "example"
            found.append(Block(page=page, number=number, kind=kind, code=code))
    return found


BLOCKS = blocks()


def printed_comments(code: str) -> list[str]:
    """What a block says it prints: `print(...)  # text`, or `# text` lines right after a print."""
    said: list[str] = []
    after_print = False
    for line in code.splitlines():
        if line.startswith("# "):
            if after_print:
                said.append(line.removeprefix("# "))
            continue
        after_print = "print(" in line
        if after_print and "  # " in line:
            said.append(line.split("  # ", 1)[1])
            after_print = False
    return said


def test_the_docs_have_python_blocks_of_each_kind() -> None:
    kinds = {block.kind for block in BLOCKS}
    assert {"run", "types", "example", "pytest"} <= kinds
    assert not kinds - {"run", "types", "example", "pytest"}


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "run"], ids=lambda b: b.name)
def test_block_runs_and_prints_what_it_says(
    block: Block,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    code = compile(block.code, block.name, "exec", dont_inherit=True)
    exec(code, {"__name__": "__main__"})
    printed = capsys.readouterr().out
    for line in printed_comments(block.code):
        assert line in printed, f"{block.name} says it prints {line!r}; it printed:\n{printed}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "pytest"], ids=lambda b: b.name)
def test_block_passes_as_a_users_test_module(block: Block, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_from_the_docs=block.code)
    result = pytester.runpytest("-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 1, result.stdout.str()
    assert set(outcomes) <= {"passed", "warnings", "warning"}, result.stdout.str()


def test_every_block_passes_mypy_strict_as_a_users_module(tmp_path: Path) -> None:
    """One mypy run over every block that is not an included example (~10 s)."""
    files = []
    for block in BLOCKS:
        if block.kind == "example":
            continue
        path = tmp_path / f"{block.page.replace('/', '_').replace('.', '_')}_{block.number}.py"
        relaxed = "# mypy: allow-untyped-defs, allow-incomplete-defs, check-untyped-defs\n"
        path.write_text(relaxed + block.code, encoding="utf-8")
        files.append(str(path))
    report, errors, status = api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache"), *files]
    )
    assert (report, errors, status) == ("", "", 0)
