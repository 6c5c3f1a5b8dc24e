"""Offline model stand-ins: a scripted OpenAI-compatible server, the calculator model, and
model ports played by a script or a function.

Users import these from `toolreel.testing`, which adds the pytest plugin around
them. They live in the shell because the shell's own demo (`python -m
toolreel.shell.demo`) answers with `ScriptedServer(calculator)` when no key is
given, and `toolreel serve` and `toolreel run --model test` use them too; none
needs a real provider or the network beyond 127.0.0.1.

- `ScriptedServer(script)`: an OpenAI-compatible server on 127.0.0.1 answering
  from a list of `Reply`s (`text(...)`, `tool_calls(...)`, `http_error(...)`,
  `cut_off(...)`) or a function of the request body (`calculator` is one);
  `reply_events` is a reply as the model events it stands for.
- `TestModel()`, `FunctionModel(fn)`: model ports that need no script; `call`,
  `Call`, `ToolCalls` and `ModelInfo` serve a function model. They are loaded on
  first use (PEP 562 `__getattr__`): their output generator imports jsonschema,
  which `toolreel serve` and the demo should not pay for at start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._calculator import calculator
from ._server import (
    Reply,
    ScriptedServer,
    cut_off,
    http_error,
    reply_events,
    text,
    tool_calls,
)

if TYPE_CHECKING:
    from ._models import Call, FunctionModel, ModelInfo, TestModel, ToolCalls, call

__all__ = [
    "Call",
    "FunctionModel",
    "ModelInfo",
    "Reply",
    "ScriptedServer",
    "TestModel",
    "ToolCalls",
    "calculator",
    "call",
    "cut_off",
    "http_error",
    "reply_events",
    "text",
    "tool_calls",
]


_MODELS = frozenset({"Call", "FunctionModel", "ModelInfo", "TestModel", "ToolCalls", "call"})


def __getattr__(name: str) -> Any:
    """The model ports and their helpers, imported when first asked for."""
    if name in _MODELS:
        return getattr(importlib.import_module(f"{__name__}._models"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
