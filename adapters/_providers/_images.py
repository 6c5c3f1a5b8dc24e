"""Images on the wire: the shared pieces of every codec's image parts, and who refuses what.

What each provider takes (docs/guides/images.md):

- openai (chat.completions): user `image_url` parts, a `data:` URL or an http(s)
  URL. Tool messages take text only, so a result's images go in one user message
  right after the round's tool messages, introduced by a line naming the call.
- openai-responses: `input_image` parts (a `data:` URL or http URL), in the user
  message and in a `function_call_output`'s `output` list.
- anthropic: `image` blocks with a `base64` or `url` source, in the user message
  and inside a `tool_result`'s `content` list.
- gemini: `inlineData` (bytes) or `fileData` (a URI) parts; a result's images
  follow its `functionResponse` parts in the same user content (the
  functionResponse's own `parts` take bytes only, and only on newer models).
- ollama (native /api/chat): an `images` list of base64 bytes on the message; a
  result's images go in one user message after the round's tool messages. Ollama
  cannot take URLs, and toolreel never fetches one itself: an image URL is refused.

Who knows: each codec says what it cannot take, as `image_urls` (a class fact:
False for Ollama) and `images` (a field: False for a text-only model, which
the user says with `AgentOptions(model_images=False)`, since a server never tells).
`refusal(codec, request)` finds the first image a codec cannot send; the HTTP
driver turns it into a fatal `ModelCallFailed` naming the provider and the image
(the turn ends `Failed`), and `Client.send` refuses a prompt's images at once
with `ContentRefused`. Nothing is ever dropped silently.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import attrs

from toolreel.core import ChatMessage, ImagePart, ModelRequest, ToolResult

C = TypeVar("C")


def b64(image: ImagePart) -> str:
    """An image's bytes as base64 text."""
    assert image.data is not None
    return base64.b64encode(image.data).decode("ascii")


def data_url(image: ImagePart) -> str:
    """A `data:` URL of the bytes, or the image's own http URL."""
    if image.url is not None:
        return image.url
    return f"data:{image.media_type};base64,{b64(image)}"


def result_note(result: ToolResult) -> str:
    """The line that introduces a result's images where they travel apart from it."""
    count = len(result.images)
    noun = "image" if count == 1 else "images"
    return f"The {noun} returned by tool {result.name!r} (call {result.call_id}):"


def images_in(messages: Sequence[ChatMessage]) -> Iterator[tuple[str, ImagePart]]:
    """Every image of the messages, with where it is (`user message 2`, `result of call c1`)."""
    for number, message in enumerate(messages, 1):
        for image in message.images:
            yield f"user message {number}", image
        for tool_round in message.tool_rounds:
            for result in tool_round.results:
                for image in result.images:
                    yield f"the result of call {result.call_id} ({result.name})", image


def refusal(codec: Any, messages: Sequence[ChatMessage]) -> str | None:
    """Why `codec` cannot send the images of `messages`; None when it can (or there are none)."""
    takes = getattr(codec, "images", True)
    urls = getattr(codec, "image_urls", True)
    if takes and urls:
        return None
    for where, image in images_in(messages):
        if not takes:
            return (
                f"{codec.name}: the model is configured text-only (model_images=False) "
                f"but {where} carries {image.label()}"
            )
        if image.url is not None:
            return (
                f"{codec.name} cannot take image URLs and toolreel does not fetch them: "
                f"{where} carries {image.label()}; pass the image's bytes instead"
            )
    return None


def text_only(codec: C) -> C:
    """The same codec for a text-only model (`images=False`)."""
    if attrs.has(type(codec)):
        return attrs.evolve(codec, images=False)  # type: ignore[misc]
    made: C = type(codec)(images=False)  # type: ignore[call-arg]
    return made


def request_refusal(codec: Any, request: ModelRequest) -> str | None:
    """`refusal` for a whole request."""
    return refusal(codec, request.messages)
