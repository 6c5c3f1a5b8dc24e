"""The layers are real: each package imports only the layers below it, with no exceptions.

`make layers` runs import-linter over the contracts in pyproject.toml; these tests pin
what those contracts say, so that a contract cannot be loosened without a test failing.
"""

from __future__ import annotations

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
