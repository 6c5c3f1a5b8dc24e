"""Images on every provider's wire: the exact request parts, and what each refuses."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import httpx2
import pytest

from toolreel.adapters import (
    AnthropicCodec,
    ContentRefused,
    GeminiCodec,
    HttpModel,
    OllamaCodec,
    OpenAICodec,
    OpenAISdkModel,
    ResponsesCodec,
    http_model,
)
from toolreel.core import (
    ChatMessage,
    ImagePart,
    ModelCallFailed,
    ModelRequest,
    ToolCall,
    ToolResult,
    ToolRound,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
B64 = base64.b64encode(PNG).decode()
IMAGE = ImagePart(media_type="image/png", data=PNG)
LINKED = ImagePart(media_type="image/jpeg", url="https://example.com/cat.jpg")
CALL = ToolCall(id="c1", name="shot", arguments="{}")


def asking(*images: ImagePart, text: str = "What is this?") -> ModelRequest:
    """A request whose only message is a user prompt with `images`."""
    message = ChatMessage(role="user", content=text, images=images)
    return ModelRequest(model="m", system=None, messages=(message,), tools=())


def after_tool(*images: ImagePart, text: str = "the screen") -> ModelRequest:
    """A request after one round whose tool returned `images` beside `text`."""
    result = ToolResult(call_id="c1", name="shot", content=text, images=images)
    rounds = (ToolRound(assistant_text="", tool_calls=(CALL,), results=(result,)),)
    messages = (
        ChatMessage(role="user", content="look"),
        ChatMessage(role="assistant", content="", tool_rounds=rounds),
    )
    return ModelRequest(model="m", system=None, messages=messages, tools=())


# OpenAI chat.completions ----------------------------------------------------------------------


def test_openai_user_images_are_image_url_parts_after_the_text() -> None:
    body = OpenAICodec().encode(asking(IMAGE, LINKED), stream=False)
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
            ],
        }
    ]


def test_openai_text_prompt_stays_a_string() -> None:
    body = OpenAICodec().encode(asking(), stream=False)
    assert body["messages"] == [{"role": "user", "content": "What is this?"}]


def test_openai_tool_images_follow_the_tool_message_in_a_user_message_naming_the_call() -> None:
    messages = OpenAICodec().encode(after_tool(IMAGE), stream=False)["messages"]
    assert messages[-2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "the screen"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "The image returned by tool 'shot' (call c1):"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}},
            ],
        },
    ]


# Anthropic -------------------------------------------------------------------------------------


def test_anthropic_user_images_are_image_blocks_with_base64_or_url_sources() -> None:
    body = AnthropicCodec().encode(asking(IMAGE, LINKED), stream=False)
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": B64},
                },
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
            ],
        }
    ]


def test_anthropic_tool_images_go_inside_the_tool_result_content() -> None:
    messages = AnthropicCodec().encode(after_tool(IMAGE), stream=False)["messages"]
    assert messages[-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "content": [
                    {"type": "text", "text": "the screen"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": B64},
                    },
                ],
            }
        ],
    }


def test_anthropic_a_tool_result_of_an_image_alone_has_no_empty_text_block() -> None:
    messages = AnthropicCodec().encode(after_tool(LINKED, text=""), stream=False)["messages"]
    assert messages[-1]["content"][0]["content"] == [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}
    ]


# Gemini ----------------------------------------------------------------------------------------


def test_gemini_user_images_are_inline_data_or_file_data_parts() -> None:
    body = GeminiCodec().encode(asking(IMAGE, LINKED), stream=False)
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "What is this?"},
                {"inlineData": {"mimeType": "image/png", "data": B64}},
                {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.jpg"}},
            ],
        }
    ]


def test_gemini_tool_images_follow_the_function_responses() -> None:
    contents = GeminiCodec().encode(after_tool(IMAGE), stream=False)["contents"]
    assert contents[-1] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "shot", "response": {"output": "the screen"}}},
            {"inlineData": {"mimeType": "image/png", "data": B64}},
        ],
    }


# Ollama ----------------------------------------------------------------------------------------


def test_ollama_user_images_are_a_base64_list_on_the_message() -> None:
    body = OllamaCodec().encode(asking(IMAGE), stream=False)
    assert body["messages"] == [{"role": "user", "content": "What is this?", "images": [B64]}]


def test_ollama_tool_images_follow_in_a_user_message_naming_the_call() -> None:
    messages = OllamaCodec().encode(after_tool(IMAGE), stream=False)["messages"]
    assert messages[-2:] == [
        {"role": "tool", "content": "the screen", "tool_name": "shot"},
        {
            "role": "user",
            "content": "The image returned by tool 'shot' (call c1):",
            "images": [B64],
        },
    ]


def test_ollama_refuses_an_image_url_naming_it_and_fetches_nothing() -> None:
    with pytest.raises(ContentRefused, match=r"ollama cannot take image URLs.*cat\.jpg"):
        OllamaCodec().encode(asking(LINKED), stream=False)


# OpenAI Responses ------------------------------------------------------------------------------


def test_responses_user_images_are_input_image_parts() -> None:
    body = ResponsesCodec().encode(asking(IMAGE, LINKED), stream=False)
    assert body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {
                    "type": "input_image",
                    "image_url": f"data:image/png;base64,{B64}",
                    "detail": "auto",
                },
                {
                    "type": "input_image",
                    "image_url": "https://example.com/cat.jpg",
                    "detail": "auto",
                },
            ],
        }
    ]


def test_responses_tool_images_are_in_the_function_call_output() -> None:
    items = ResponsesCodec().encode(after_tool(IMAGE), stream=False)["input"]
    assert items[-1] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [
            {"type": "input_text", "text": "the screen"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{B64}", "detail": "auto"},
        ],
    }


# Refusals through the HTTP driver: a precise failure, and nothing sent ------------------------


def _events(model: HttpModel, request: ModelRequest) -> list[Any]:
    async def collect() -> list[Any]:
        try:
            return [event async for event in model.stream(request)]
        finally:
            await model.aclose()

    return anyio.run(collect)


def _unreachable(request: httpx2.Request) -> httpx2.Response:
    raise AssertionError(f"a refused request was sent: {request.url}")


@pytest.mark.parametrize(
    "provider", ["openai", "anthropic", "gemini", "ollama", "openai-responses"]
)
def test_a_text_only_model_fails_the_call_naming_the_provider_and_the_image(provider: str) -> None:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(_unreachable))
    model = http_model(provider, base_url="http://127.0.0.1:9", images=False, client=client)
    events = _events(model, after_tool(IMAGE))
    anyio.run(client.aclose)
    assert events == [
        ModelCallFailed(
            retryable=False,
            message=f"{provider}: the model is configured text-only (model_images=False) but "
            "the result of call c1 (shot) carries [image image/png, 16 bytes]",
        )
    ]


def test_ollama_over_http_fails_an_image_url_without_sending_it() -> None:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(_unreachable))
    model = http_model("ollama", base_url="http://127.0.0.1:9", client=client)
    (event,) = _events(model, asking(LINKED))
    anyio.run(client.aclose)
    assert isinstance(event, ModelCallFailed) and not event.retryable
    assert event.message.startswith("ollama cannot take image URLs and toolreel does not fetch")
    assert "user message 1 carries [image image/jpeg, https://example.com/cat.jpg]" in event.message


def test_a_text_only_model_sends_text_requests_as_before() -> None:
    body = http_model("openai", base_url="http://x", images=False).codec.encode(
        asking(), stream=False
    )
    assert body["messages"] == [{"role": "user", "content": "What is this?"}]


def test_the_openai_sdk_model_refuses_images_for_a_text_only_codec_without_calling() -> None:
    class Untouchable:
        api_key = None

        @property
        def chat(self) -> Any:
            raise AssertionError("the SDK client was called")

    model = OpenAISdkModel(Untouchable(), codec=OpenAICodec(images=False))

    async def collect() -> list[Any]:
        return [event async for event in model.stream(asking(IMAGE))]

    (event,) = anyio.run(collect)
    assert event == ModelCallFailed(
        retryable=False,
        message="openai: the model is configured text-only (model_images=False) but "
        "user message 1 carries [image image/png, 16 bytes]",
    )
