"""`toolreel serve --max-...`: every chat the served app runs has the budget the flags give,
with the scripted calculator model and with a model at --base-url alike."""

from __future__ import annotations

from typing import Any

import pytest
from test_web_app import call, chat_body, ui_parts_of

from toolreel.adapters import Journal
from toolreel.cli import _serve, main
from toolreel.shell import AgentOptions
from toolreel.shell.scripted import ScriptedServer, calculator
from toolreel.web import app


def served_finish(monkeypatch: pytest.MonkeyPatch, *args: str) -> dict[str, Any]:
    """`toolreel serve ARGS`, with the app it would serve asked one prompt; its finish part."""
    finishes: list[dict[str, Any]] = []

    def serve(options: AgentOptions, journal: Journal | None, **_: Any) -> int:
        """Instead of uvicorn: one chat through the app these options make."""
        parts = ui_parts_of(call(app(options, journal=journal), "POST", "/api/chat", ASK))
        finishes.append(parts[-1])
        return 0

    monkeypatch.setattr(_serve, "serve", serve)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["serve", "--port", "0", *args]) == 0
    [finish] = finishes
    return finish


ASK = chat_body("What is 25 plus 17?")  # the calculator calls `add` once, then answers


def test_serve_gives_the_scripted_models_chats_the_budget(monkeypatch) -> None:
    finish = served_finish(monkeypatch, "--max-tool-calls", "0")
    metadata = finish["messageMetadata"]
    assert metadata["reason"] == "over_budget"
    assert metadata["budget"]["limit_name"] == "tool_calls" and metadata["budget"]["limit"] == 0


def test_serve_gives_a_real_models_chats_the_budget(monkeypatch) -> None:
    with ScriptedServer(calculator) as server:
        finish = served_finish(
            monkeypatch,
            *("--base-url", server.url, "--model", "m", "--api-key", "sk-test"),
            *("--tools", "toolreel.shell.demo:TOOLS", "--max-model-calls", "1"),
        )
    assert finish["messageMetadata"]["reason"] == "over_budget"
    assert finish["messageMetadata"]["budget"]["limit_name"] == "model_calls"


def test_serve_without_budget_flags_completes(monkeypatch) -> None:
    assert served_finish(monkeypatch)["messageMetadata"]["reason"] == "completed"
