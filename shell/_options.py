"""AgentOptions: everything a Client needs, open_agent's names first, toolreel's own after."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from toolreel.adapters import Journal, Timeouts
from toolreel.adapters._redact import clean_key
from toolreel.core import MaxIterationsPolicy, RetryPolicy

from ._tools import Tool


@attrs.define(kw_only=True)
class AgentOptions:
    """How a Client talks to its model, which tools it offers, and how the loop runs.

    `provider` is "openai" (any OpenAI-compatible server: OpenAI, Ollama's /v1,
    LM Studio, vLLM, llama.cpp, OpenRouter), "anthropic", "gemini" or "ollama"
    (native /api/chat); `base_url` points it anywhere, with the provider's usual
    paths below it. `api_key` defaults to the provider's environment variable.
    `journal` is a path (".db" for SQLite, ".jsonl" for JSON lines) or a
    Journal; without one, the session is journaled in memory. `timeout` bounds
    each read, `call_timeout` a whole model call, `idle_timeout` a stream
    without content (keep-alives do not count); past either, the call fails
    and is retried like any transient failure.
    """

    system_prompt: str | None = None
    model: str = ""
    base_url: str | None = None
    provider: str = "openai"
    api_key: str | None = attrs.field(default=None, repr=False, converter=clean_key)
    tools: Sequence[Tool] = ()
    auto_execute_tools: bool = False
    max_tool_iterations: int = 5
    hooks: Mapping[Any, Sequence[Callable[..., Any]]] = attrs.Factory(dict)
    max_tokens: int | None = None
    temperature: float | None = None
    stream: bool = True
    timeout: float = 300.0
    call_timeout: float = 600.0
    idle_timeout: float = 120.0
    # toolreel's own
    on_max_iterations: MaxIterationsPolicy | str = MaxIterationsPolicy.STOP
    retry: RetryPolicy = attrs.Factory(RetryPolicy)
    tool_timeout: float = 60.0
    max_concurrent_tools: int | None = None
    journal: str | Journal | None = None
    session_id: str | None = None
    tool_choice: str = "auto"
    on_tool_call: Callable[..., Any] | None = None
    on_tool_result: Callable[..., Any] | None = None
    on_round: Callable[..., Any] | None = None
    on_finish: Callable[..., Any] | None = None

    def timeouts(self) -> Timeouts:
        """The HTTP limits these options ask for."""
        return Timeouts(read=self.timeout, total=self.call_timeout, idle=self.idle_timeout)
