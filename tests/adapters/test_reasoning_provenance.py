"""Reasoning goes back only to the provider that produced it (a session that fell back to
another provider; docs/guides/fallback.md): each codec stamps the blocks it decodes, and
sends back only its own (and those of unknown origin, as journals before the stamp hold)."""

from __future__ import annotations

import json

import pytest

from toolreel.adapters import (
    AnthropicCodec,
    GeminiCodec,
    OllamaCodec,
    OpenAICodec,
    ResponsesCodec,
    structure,
    unstructure,
)
from toolreel.core import (
    CallModel,
    ChatMessage,
    Event,
    ModelRequest,
    Reasoning,
    ReasoningDelta,
    ToolCall,
    ToolResult,
    ToolRound,
)

#: What the Responses codec keeps of a reasoning item: its summary, the item as the signature.
RESPONSES_ITEM = '{"encrypted_content":"gAAA","id":"rs_1","type":"reasoning"}'


def history(block: Reasoning) -> ModelRequest:
    """A request whose one tool round carries `block`."""
    call = ToolCall(id="c1", name="add", arguments='{"a":1}')
    rounds = (
        ToolRound(
            assistant_text="",
            tool_calls=(call,),
            results=(ToolResult(call_id="c1", name="add", content="2"),),
            reasoning=(block,),
        ),
    )
    return ModelRequest(
        model="m",
        system=None,
        messages=(
            ChatMessage(role="user", content="add"),
            ChatMessage(role="assistant", content="2", tool_rounds=rounds),
        ),
        tools=(),
    )


def anthropic_thinking(request: ModelRequest) -> list[dict[str, object]]:
    """The thinking blocks of an Anthropic request body."""
    body = AnthropicCodec().encode(request, stream=False)
    return [
        block
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") in ("thinking", "redacted_thinking")
    ]


def responses_reasoning(request: ModelRequest) -> list[dict[str, object]]:
    """The reasoning items of a Responses request body."""
    body = ResponsesCodec().encode(request, stream=False)
    return [item for item in body["input"] if item.get("type") == "reasoning"]


def test_responses_reasoning_never_reaches_anthropic_as_a_thinking_signature() -> None:
    block = Reasoning(text="summary", signature=RESPONSES_ITEM, provider="openai-responses")
    assert anthropic_thinking(history(block)) == []
    assert [item["id"] for item in responses_reasoning(history(block))] == ["rs_1"]


def test_anthropic_thinking_goes_back_to_anthropic_only() -> None:
    block = Reasoning(text="hmm", signature="sig-1", provider="anthropic")
    assert anthropic_thinking(history(block)) == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig-1"}
    ]
    redacted = Reasoning(redacted="opaque", provider="anthropic")
    assert anthropic_thinking(history(redacted)) == [
        {"type": "redacted_thinking", "data": "opaque"}
    ]
    assert responses_reasoning(history(block)) == []
    gemini = json.dumps(GeminiCodec().encode(history(block), stream=False))
    assert "sig-1" not in gemini


def test_a_gemini_signature_goes_back_to_gemini_only() -> None:
    block = Reasoning(signature="gem-sig", provider="gemini")
    assert "gem-sig" in json.dumps(GeminiCodec().encode(history(block), stream=False))
    assert anthropic_thinking(history(block)) == []


def test_reasoning_text_goes_back_to_an_openai_compatible_server_only_from_one() -> None:
    codec = OpenAICodec(reasoning_field="reasoning_content")
    own = Reasoning(text="deep thought", provider="openai")
    other = Reasoning(text="deep thought", signature="sig", provider="anthropic")
    assert "deep thought" in json.dumps(codec.encode(history(own), stream=False))
    assert "deep thought" not in json.dumps(codec.encode(history(other), stream=False))
    assert "deep thought" not in json.dumps(OllamaCodec().encode(history(other), stream=False))


def test_a_block_of_unknown_origin_goes_back_as_before() -> None:
    """Journals written before the stamp: one provider per session, sent back as ever."""
    block = Reasoning(text="hmm", signature="sig-1")
    assert anthropic_thinking(history(block))[0]["signature"] == "sig-1"


@pytest.mark.parametrize(
    ("codec", "body", "provider"),
    [
        (
            AnthropicCodec(),
            {
                "content": [{"type": "thinking", "thinking": "t", "signature": "s"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
            "anthropic",
        ),
        (
            ResponsesCodec(),
            {
                "status": "completed",
                "output": [
                    {
                        "type": "reasoning",
                        "id": "rs_1",
                        "summary": [{"type": "summary_text", "text": "t"}],
                        "encrypted_content": "gAAA",
                    }
                ],
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
            "openai-responses",
        ),
    ],
)
def test_each_codec_stamps_the_reasoning_it_decodes(
    codec: object, body: dict[str, object], provider: str
) -> None:
    events = codec.decode_body(json.dumps(body).encode())  # type: ignore[attr-defined]
    reasoning = [event for event in events if isinstance(event, ReasoningDelta)]
    assert reasoning and {event.provider for event in reasoning} == {provider}


def test_journals_without_provenance_read_and_new_records_write_it_only_when_known() -> None:
    old = {"text": "hmm", "signature": "sig-1", "redacted": None}  # as journals before it held
    assert structure(old, Reasoning) == Reasoning(text="hmm", signature="sig-1")
    assert unstructure(Reasoning(text="hmm", signature="sig-1")) == old
    assert unstructure(Reasoning(signature="s", provider="gemini"))["provider"] == "gemini"
    failed = {"type": "ModelCallFailed", "retryable": True, "message": "busy"}
    assert "context_length" not in unstructure(structure(failed, Event))  # type: ignore[arg-type]
    call = unstructure(CallModel(request=history(old_block()), iteration=1))
    assert "model" not in call
    fallback_call = unstructure(CallModel(request=history(old_block()), iteration=1, model=1))
    assert fallback_call["model"] == 1


def old_block() -> Reasoning:
    """A reasoning block of unknown origin."""
    return Reasoning(text="hmm", signature="sig-1")
