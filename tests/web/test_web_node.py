"""The encoded parts, checked by the real `ai` package (Node): its schema and its stream reader.

Runs when `node` and an install of `ai` are present: `$TOOLREEL_AI_SDK` (a folder
whose node_modules holds `ai`), else ~/.cache/toolreel/ai-sdk, which `.ci/run`
fills (`npm install --prefix ~/.cache/toolreel/ai-sdk ai@7`). Skips otherwise, saying
why; `make test` never downloads from npm.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from web_support import (
    ADD,
    BLOCKED,
    CANCELLED,
    CAPPED,
    EVERY_NOTICE,
    FAILED,
    HERE,
    fold_ui,
)

from toolreel.core.notices import ResultsRequested, TextStreamed, ToolCallAnnounced
from toolreel.shell import AgentOptions
from toolreel.shell.demo import TOOLS
from toolreel.shell.scripted import ScriptedServer, calculator
from toolreel.web import app
from toolreel.web.streams import ui_error, ui_parts, ui_start

AI_SDK = Path(os.environ.get("TOOLREEL_AI_SDK") or Path.home() / ".cache/toolreel/ai-sdk")
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (AI_SDK / "node_modules/ai/package.json").is_file(),
        reason=f"the ai package is not installed in {AI_SDK} (set TOOLREEL_AI_SDK, "
        f"or: npm install --prefix {AI_SDK} ai@7)",
    ),
]


def read_with_ai(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """What the ai package makes of `parts`: invalid chunks, reader error, the message."""
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(HERE / "validate_ui_chunks.mjs")],
        input="".join(json.dumps(part) + "\n" for part in parts),
        capture_output=True,
        text=True,
        cwd=AI_SDK,
        timeout=60,
        check=False,
    )
    assert done.stdout, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 0, result
    return result


def test_every_notice_kind_is_valid_and_reads_into_one_assistant_message() -> None:
    result = read_with_ai(fold_ui(EVERY_NOTICE))
    assert result["invalid"] == [] and result["error"] is None
    message = result["message"]
    tools = {p["toolCallId"]: p for p in message["parts"] if p["type"].startswith("tool-")}
    assert tools["call_1"]["state"] == "output-available"
    assert tools["call_2"]["state"] == "output-error"
    assert tools["call_3"]["state"] == "output-error"
    texts = [p["text"] for p in message["parts"] if p["type"] == "text"]
    assert texts == ["Let me see. ", "It is 5."]  # the retried call's text was reset
    assert message["metadata"]["reason"] == "completed"


def test_arguments_streamed_in_fragments_show_as_partial_input_while_the_call_is_written() -> None:
    result = read_with_ai(fold_ui(EVERY_NOTICE))
    assert result["invalid"] == [] and result["error"] is None
    shown = [(state, given) for call_id, state, given in result["tools"] if call_id == "call_1"]
    assert shown[:4] == [
        ("input-streaming", None),  # tool-input-start: no input yet
        ("input-streaming", {"a": 2}),  # '{"a": 2, ' read as partial JSON
        ("input-streaming", {"a": 2, "b": 3}),  # all written, not yet announced
        ("input-available", {"a": 2, "b": 3}),
    ]


@pytest.mark.parametrize("end", [CAPPED, FAILED, CANCELLED, BLOCKED])
def test_every_way_a_turn_ends_is_read_cleanly(end: Any) -> None:
    result = read_with_ai(fold_ui([TextStreamed(text="hi"), end]))
    assert result["invalid"] == []
    assert result["message"]["metadata"]["reason"] == end.reason.value


def test_manual_mode_and_a_stopped_turn_are_read_cleanly() -> None:
    manual = fold_ui([ToolCallAnnounced(call=ADD, iteration=1), ResultsRequested(calls=(ADD,))])
    assert read_with_ai(manual)["invalid"] == []
    stream, parts = ui_start("m")
    stream, more = ui_parts(stream, TextStreamed(text="hi"), 0.0)
    _, end = ui_error(stream, "the journal gave up")
    result = read_with_ai([*parts, *more, *end])
    assert result["invalid"] == []
    assert result["error"] == "the journal gave up"


def test_a_real_turn_served_by_the_app_reads_into_the_answer_and_its_tool_parts() -> None:
    async def post(url: str) -> str:
        web = app(AgentOptions(model="scripted-calculator", base_url=url, tools=TOOLS))
        user = {
            "id": "u",
            "role": "user",
            "parts": [{"type": "text", "text": "What's 7 times 8, then add 5?"}],
        }
        body = {"id": "c", "messages": [user], "trigger": "submit-message"}
        transport = httpx2.ASGITransport(app=web)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return (await client.post("/api/chat", json=body)).text

    with ScriptedServer(calculator) as server:
        text = anyio.run(post, server.url)
    events = [e.removeprefix("data: ") for e in text.split("\n\n") if e]
    assert events[-1] == "[DONE]"
    result = read_with_ai([json.loads(e) for e in events[:-1]])
    parts = result["message"]["parts"]
    tools = [(p["type"], p["state"], p["input"]) for p in parts if p["type"].startswith("tool-")]
    assert tools == [
        ("tool-multiply", "output-available", {"a": 7, "b": 8}),
        ("tool-add", "output-available", {"a": 56, "b": 5}),
    ]
    assert [p["text"] for p in parts if p["type"] == "text"][-1] == "The answer is 61."
    assert [p["type"] for p in parts].count("step-start") == 3
    streaming = [given for _, state, given in result["tools"] if state == "input-streaming"]
    assert {"a": 7} in streaming  # the first call's input seen partly written
