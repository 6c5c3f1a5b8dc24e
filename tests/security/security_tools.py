"""Tools the browser tests serve: the demo's calculator, `multiply` held for approval."""

from __future__ import annotations

import attrs

from toolreel.shell import Tool
from toolreel.shell.demo import add, divide, multiply, subtract

TOOLS: list[Tool] = [add, subtract, attrs.evolve(multiply, requires_approval=True), divide]
