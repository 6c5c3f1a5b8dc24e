"""`imported`: the object a `MODULE:ATTR` flag names, found beside the working directory too."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click


def imported(spec: str, shape: str = "MODULE:ATTR") -> Any:
    """What `module:attr` (dotted attributes allowed) names; a `BadParameter` saying why not.

    The working directory joins the import path, as `--tools` finds modules beside you.
    """
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise click.BadParameter(f"expected {shape}, got {spec!r}")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        value: Any = importlib.import_module(module_name)
    except Exception as exc:  # a missing module, or one that fails as it is imported
        raise click.BadParameter(f"cannot import {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(value, part):
            raise click.BadParameter(f"{module_name!r} has no attribute {attr!r}")
        value = getattr(value, part)
    return value
