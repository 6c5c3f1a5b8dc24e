"""An MCP tool result as what the model reads: `CallToolResult` -> `Result[str | ToolOutput, str]`.

Rules, in order:
1. `is_error` is an error result (its text, or a line naming the tool when it has none).
2. The text blocks, joined by newlines, are the output (servers send structured content
   as JSON text too, as the MCP specification asks: "SHOULD also return the serialized
   JSON in a TextContent block").
3. A result with structured content and no text block is that content as JSON text.
4. An image the model can be shown (an image block, or an embedded blob resource, of a
   media type every provider takes: PNG, JPEG, GIF, WebP) follows the text as an image
   of the result (a `ToolOutput`), as a local tool's returned `ImagePart` does.
5. Any other block (audio, a resource link, another binary resource, an image of another
   type or whose data is not base64) is a one-line placeholder naming what it was, never
   silently dropped; so is every image of an error result (an error result is text).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp.types as mcp_types
from returns.result import Failure, Result, Success

from toolreel.core import ConfigError, ImagePart
from toolreel.shell.engine import ToolOutput


def result_text(tool: str, result: mcp_types.CallToolResult) -> Result[str | ToolOutput, str]:
    """What the model reads of one tool call's result (text and images), or its error text."""
    texts: list[str] = []
    images: list[ImagePart] = []
    for block in result.content:
        image = None if result.is_error else block_image(block)
        if image is not None:
            images.append(image)
        else:
            texts.append(block_text(block))
    if not texts and not images and result.structured_content is not None:
        texts = [structured_text(result.structured_content)]
    text = "\n".join(texts)
    if result.is_error:
        return Failure(text or f"MCP tool {tool} failed (the server gave no message)")
    return Success(ToolOutput(text=text, images=tuple(images)) if images else text)


def structured_text(content: Any) -> str:
    """Structured content as compact JSON text (what JSON cannot hold, as its str)."""
    return json.dumps(content, ensure_ascii=False, default=str)


def block_image(block: mcp_types.ContentBlock) -> ImagePart | None:
    """The image a block carries that the model can be shown (rule 4), else None."""
    if isinstance(block, mcp_types.ImageContent):
        return _image(block.data, block.mime_type)
    if isinstance(block, mcp_types.EmbeddedResource) and isinstance(
        block.resource, mcp_types.BlobResourceContents
    ):
        return _image(block.resource.blob, block.resource.mime_type or "")
    return None


def _image(data: str, media_type: str) -> ImagePart | None:
    """Base64 `data` of `media_type` as an image; None if it cannot be one (rule 5)."""
    try:
        return ImagePart(media_type=media_type, data=base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError, ConfigError):
        return None


def block_text(block: mcp_types.ContentBlock) -> str:
    """One content block as text: a text block as it is, anything else a placeholder."""
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return resource.text
        return f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'})]"
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        return f"[{block.type} ({block.mime_type}) not shown]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource {block.uri}]"
    return f"[{getattr(block, 'type', type(block).__name__)} not shown]"
