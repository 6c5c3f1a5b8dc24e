"""The layers are real: each package imports only the layers below it, with no exceptions.

`make layers` runs import-linter over the contracts in pyproject.toml; these tests pin
what those contracts say, so that a contract cannot be loosened without a test failing.
"""

from __future__ import annotations

import ast
import importlib.util
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def importlinter() -> dict[str, Any]:
    """The [tool.importlinter] table of pyproject.toml."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return table["tool"]["importlinter"]


def contract(kind: str) -> dict[str, Any]:
    """The one contract of this type."""
    (found,) = [c for c in importlinter()["contracts"] if c["type"] == kind]
    return found


def test_the_command_is_the_top_level_cli_package() -> None:
    table = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert table["project"]["scripts"] == {"toolreel": "toolreel.cli:main"}
    assert importlib.util.find_spec("toolreel.cli") is not None
    assert importlib.util.find_spec("toolreel.shell.cli") is None


def test_the_cli_is_the_top_layer_and_no_import_is_ignored() -> None:
    layers = contract("layers")
    assert layers["layers"][0] == "toolreel.cli"
    assert layers["layers"][-3:] == ["toolreel.shell", "toolreel.adapters", "toolreel.core"]
    assert "ignore_imports" not in layers
    assert "toolreel.cli" in importlinter()["root_packages"]


def test_no_package_imports_another_packages_private_module() -> None:
    """import-linter's private_modules contract, over every root package, ignoring nothing."""
    private = contract("private_modules")
    assert "packages_with_private_modules" not in private  # every root package is checked
    assert "ignore_imports" not in private


#: Every module the pure core may import (REVIEW.md section 1): attrs and the standard
#: library's pure parts. No clock, randomness, I/O, threads or environment (reprlib's
#: guard against a record printed inside itself only reads the running thread's id).
CORE_MAY_IMPORT = frozenset(
    {
        "__future__",
        "attrs",
        "collections.abc",
        "enum",
        "functools",
        "json",
        "math",
        "re",
        "reprlib",
        "types",
        "typing",
    }
)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Each absolute import of a module (its line and the module), wherever it is written."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_the_core_imports_only_what_its_allow_list_names() -> None:
    offenders = [
        f"core/{path.relative_to(ROOT / 'core')}:{line} imports {module}"
        for path in sorted((ROOT / "core").rglob("*.py"))
        for line, module in imports_of(path)
        if module not in CORE_MAY_IMPORT and module.split(".")[:2] != ["toolreel", "core"]
    ]
    assert offenders == []


def test_the_allow_list_catches_an_import_it_does_not_name(tmp_path: Path) -> None:
    module = tmp_path / "sneaky.py"
    module.write_text("import json\n\ndef now():\n    from time import time\n    return time()\n")
    assert [name for _, name in imports_of(module) if name not in CORE_MAY_IMPORT] == ["time"]
