"""No public name means two objects across toolreel's own packages.

A user who reads `Decision` or `FunctionModel` in one package's docs must not
find another object under that name in another. `toolreel.open_agent` is the
exception on purpose: it keeps open-agent-sdk's names (`Client`, `AgentOptions`,
`tool`, ...), so that code written for open_agent runs with one import changed.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from pathlib import Path

import pytest

NATIVE = ["core", "adapters", "shell", "testing", "web", "mcp", "otel", "temporal"]
#: With their public submodules (toolreel.core.budget, toolreel.shell.hooks, ...), as
#: tests/public_names.txt lists them.
MODULES = sorted(
    {
        line.split()[0].removeprefix("toolreel.")
        for line in (Path(__file__).with_name("public_names.txt")).read_text().splitlines()
        if line and not line.startswith("#") and line.split(".")[1] in NATIVE
    }
)


def test_a_name_exported_by_two_native_packages_is_one_object() -> None:
    owners: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for package in MODULES:
        module = pytest.importorskip(f"toolreel.{package}")
        if not hasattr(module, "__all__"):
            continue
        for name in module.__all__:
            owners[name][id(getattr(module, name))].append(package)
    twice = {name: sorted(map(tuple, by_object.values())) for name, by_object in owners.items()}
    assert {name: places for name, places in twice.items() if len(places) > 1} == {}


def test_open_agent_keeps_open_agents_own_names() -> None:
    open_agent = importlib.import_module("toolreel.open_agent")
    shell = importlib.import_module("toolreel.shell")
    hooks = importlib.import_module("toolreel.shell.hooks")
    for name, ours in [
        ("Client", shell),
        ("AgentOptions", shell),
        ("tool", shell),
        ("Tool", shell),
        ("HookDecision", hooks),
    ]:
        assert name in open_agent.__all__
        assert getattr(open_agent, name) is not getattr(ours, name)
    for name in ["TextBlock", "ToolUseBlock", "ToolUseError"]:  # the blocks are its alone
        assert name in open_agent.__all__ and name not in shell.__all__
