"""Offline model stand-ins: a scripted OpenAI-compatible server and the calculator model.

The demo (`python -m toolreel.shell.demo`), `toolreel serve` and `toolreel.testing` import
these names from here, so none needs a real provider or the network beyond 127.0.0.1.
Users reach them through `toolreel.testing` (`ScriptedServer`, `calculator`, `Reply`,
`text`, `tool_calls`, `http_error`, `cut_off`); the rest serves toolreel's own tests.
`_models` (`TestModel`, `FunctionModel`: toolreel.testing's, and `toolreel run --model
test`'s) is imported from its module, by those who use it.
"""

from __future__ import annotations

from ._calculator import Step, calculator, number_in, parse_clause, plan
from ._local import LocalServer, Request
from ._server import (
    Reply,
    ScriptedServer,
    cut_off,
    http_error,
    json_body,
    reply_events,
    sse_events,
    text,
    tool_calls,
)

#: The calculator's former name, which toolreel's own tests still import.
openai_reply = calculator

__all__ = [
    "LocalServer",
    "Reply",
    "Request",
    "ScriptedServer",
    "Step",
    "calculator",
    "cut_off",
    "http_error",
    "json_body",
    "number_in",
    "openai_reply",
    "parse_clause",
    "plan",
    "reply_events",
    "sse_events",
    "text",
    "tool_calls",
]
