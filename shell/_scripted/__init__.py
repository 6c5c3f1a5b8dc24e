"""Offline model stand-ins: a scripted OpenAI-compatible server and the calculator model.

The demo (`python -m toolreel.shell.demo`) and `toolreel.testing` import these names from
here, so neither needs a real provider or the network beyond 127.0.0.1. `_models`
(`TestModel`, `FunctionModel`: toolreel.testing's, and `toolreel run --model test`'s)
is imported from its module, by those who use it.
"""

from __future__ import annotations

from ._calculator import Step, number_in, openai_reply, parse_clause, plan
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

__all__ = [
    "LocalServer",
    "Reply",
    "Request",
    "ScriptedServer",
    "Step",
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
