"""MkDocs hook: the CLI reference page documents the click group the `toolreel` script runs.

`docs/cli.md` holds a `mkdocs-click` directive whose module and command are the
placeholders `{{ cli_module }}` and `{{ cli_command }}`; this hook fills them in from
`[project.scripts]` in pyproject.toml (the script's module, and in it the click command
named `toolreel`), so the page follows the command wherever its package moves.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path
from typing import Any

import click

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def entry_point() -> tuple[str, str]:
    """The (module, attribute) the `toolreel` console script names."""
    scripts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["scripts"]
    module, _, attribute = scripts["toolreel"].partition(":")
    return module, attribute


def click_command() -> tuple[str, str]:
    """The module and name of the click command the script runs (it may wrap it in a function)."""
    module_name, attribute = entry_point()
    module = importlib.import_module(module_name)
    if isinstance(getattr(module, attribute), click.Command):
        return module_name, attribute
    for name, value in vars(module).items():
        if isinstance(value, click.Command) and value.name == "toolreel":
            return module_name, name
    raise LookupError(f"no click command named 'toolreel' in {module_name}")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Fill the CLI page's placeholders with the command's module and name."""
    if "{{ cli_module }}" not in markdown:
        return markdown
    module, name = click_command()
    return markdown.replace("{{ cli_module }}", module).replace("{{ cli_command }}", name)
