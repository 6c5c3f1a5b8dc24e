"""The Python blocks of the repository's Markdown pages (README.md, docs/), for tests."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```python[^\n]*\n(.*?)```", re.S)


def python_blocks(page: str) -> list[str]:
    """Every ```python block of a page (a path from the repository's root), in order."""
    return BLOCK.findall((ROOT / page).read_text(encoding="utf-8"))


def python_block(page: str, marker: str) -> str:
    """The one ```python block of a page that contains `marker` (an error if not exactly one)."""
    found = [block for block in python_blocks(page) if marker in block]
    if len(found) != 1:
        raise LookupError(f"{page} has {len(found)} python blocks containing {marker!r}, not 1")
    return found[0]


def python_block_under(page: str, heading: str) -> str:
    """The first ```python block after a page's heading (`### Name`)."""
    section = (ROOT / page).read_text(encoding="utf-8").split(f"{heading}\n", 1)[1]
    return BLOCK.findall(section)[0]
