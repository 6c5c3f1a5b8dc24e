"""Every codec reads a JSON escape of half a surrogate pair (valid JSON, not valid text) as
the standard library does; `well_formed` makes what it decoded writable (issue 20, item 3).

Each provider's whole response carries `"\\ud800"` in its text and in a call's
arguments (as an escape inside the arguments' JSON text, or inside an object).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from toolreel.adapters import PROVIDERS
from toolreel.adapters.records import event_data, event_of
from toolreel.core import (
    ModelCallFailed,
    TextDelta,
    ToolCallArgumentsDelta,
    arguments_object,
    well_formed,
)

LONE = "\ud800"
ARGUMENTS = {"s": f"x {LONE}"}

BODIES: dict[str, dict[str, Any]] = {
    "openai": {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": f"bad {LONE} text",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {
                                "name": "echo",
                                "arguments": json.dumps(ARGUMENTS, ensure_ascii=False),
                            },
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    },
    "anthropic": {
        "type": "message",
        "content": [
            {"type": "text", "text": f"bad {LONE} text"},
            {"type": "tool_use", "id": "t1", "name": "echo", "input": ARGUMENTS},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
    "gemini": {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": f"bad {LONE} text"},
                        {"functionCall": {"name": "echo", "args": ARGUMENTS}},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1},
    },
    "ollama": {
        "model": "m",
        "message": {
            "role": "assistant",
            "content": f"bad {LONE} text",
            "tool_calls": [{"function": {"name": "echo", "arguments": ARGUMENTS}}],
        },
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 1,
        "eval_count": 1,
    },
    "openai-responses": {
        "status": "completed",
        "output": [
            {"type": "message", "content": [{"type": "output_text", "text": f"bad {LONE} text"}]},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "echo",
                "arguments": json.dumps(ARGUMENTS, ensure_ascii=False),
            },
        ],
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}


def test_every_provider_has_a_body_here() -> None:
    assert sorted(BODIES) == sorted(PROVIDERS)


@pytest.mark.parametrize("provider", sorted(BODIES))
def test_text_and_arguments_with_half_a_pair_decode_and_are_made_writable(provider: str) -> None:
    body = json.dumps(BODIES[provider]).encode()  # escapes: valid JSON, valid UTF-8
    events = PROVIDERS[provider]().decode_body(body)
    assert not any(isinstance(event, ModelCallFailed) for event in events), events
    formed = [well_formed(event) for event in events]
    for event in formed:
        assert event_of(orjson.loads(orjson.dumps(event_data(event)))) == event
    text = "".join(event.text for event in formed if isinstance(event, TextDelta))
    assert text == "bad \ufffd text"
    arguments = "".join(e.fragment for e in formed if isinstance(e, ToolCallArgumentsDelta))
    assert arguments_object(arguments) == {"s": "x \ufffd"}
