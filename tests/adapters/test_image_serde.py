"""Images in the journal's JSON: bytes as base64, and text-only records exactly as before."""

from __future__ import annotations

import base64

import pytest

from toolreel.adapters import DecodeError, effect_record, event_from_json, structure, unstructure
from toolreel.adapters._journal import messages_digest
from toolreel.adapters.records import event_data, event_of
from toolreel.core import ChatMessage, ImagePart, Persist, PromptSubmitted, ToolFinished, ToolResult

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
B64 = base64.b64encode(PNG).decode()
IMAGE = ImagePart(media_type="image/png", data=PNG)
LINKED = ImagePart(media_type="image/jpeg", url="https://example.com/cat.jpg")


def test_a_prompts_images_are_written_as_base64_and_read_back() -> None:
    event = PromptSubmitted(text="what?", images=(IMAGE, LINKED))
    data = event_data(event)
    assert data == {
        "type": "PromptSubmitted",
        "text": "what?",
        "images": [
            {"media_type": "image/png", "data": B64},
            {"media_type": "image/jpeg", "url": "https://example.com/cat.jpg"},
        ],
    }
    assert event_of(data) == event


def test_a_tools_images_are_written_and_read_back() -> None:
    event = ToolFinished(call_id="c1", output="screen", images=(IMAGE,))
    assert event_of(event_data(event)) == event
    result = ToolResult(call_id="c1", name="shot", content="screen", images=(IMAGE,))
    assert structure(unstructure(result), ToolResult) == result


def test_text_only_records_are_written_exactly_as_before_images_existed() -> None:
    assert event_data(PromptSubmitted(text="hi")) == {"type": "PromptSubmitted", "text": "hi"}
    assert event_data(ToolFinished(call_id="c", output="o")) == {
        "type": "ToolFinished",
        "call_id": "c",
        "output": "o",
        "is_error": False,
    }
    message = ChatMessage(role="user", content="hi")
    assert effect_record(Persist(message=message)) == {
        "type": "Persist",
        "message": {"role": "user", "content": "hi", "tool_rounds": [], "reasoning": []},
    }


def test_an_image_changes_a_messages_digest() -> None:
    plain = ChatMessage(role="user", content="hi")
    assert messages_digest([plain]) != messages_digest(
        [ChatMessage(role="user", content="hi", images=(IMAGE,))]
    )


def test_damaged_image_data_is_not_an_event() -> None:
    text = '{"type":"PromptSubmitted","text":"x","images":[{"media_type":"image/png","data":"@@"}]}'
    with pytest.raises(DecodeError, match="not an event's JSON"):
        event_from_json(text)
    wrong = text.replace("image/png", "image/bmp").replace("@@", B64)
    with pytest.raises(DecodeError, match="not an event's JSON"):
        event_from_json(wrong)
