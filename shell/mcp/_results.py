"""An MCP tool result as the text the model reads: `CallToolResult` -> `Result[str, str]`.

Rules, in order:
1. `is_error` is an error result (its text, or a line naming the tool when it has none).
2. The text blocks, joined by newlines, are the output (servers send structured content
   as JSON text too, as the MCP specification asks: "SHOULD also return the serialized
   JSON in a TextContent block").
3. A result with structured content and no text block is that content as JSON text.
4. A block that is not text (an image, audio, a resource link, a binary resource) is a
   one-line placeholder naming what it was, never silently dropped.
"""

from __future__ import annotations

import json
from typing import Any

import mcp.types as mcp_types
from returns.result import Failure, Result, Success


def result_text(tool: str, result: mcp_types.CallToolResult) -> Result[str, str]:
    """The model's text for one tool call's result, or its error text (rules 1-4)."""
    texts = [block_text(block) for block in result.content]
    if not texts and result.structured_content is not None:
        texts = [structured_text(result.structured_content)]
    text = "\n".join(texts)
    if result.is_error:
        return Failure(text or f"MCP tool {tool} failed (the server gave no message)")
    return Success(text)


def structured_text(content: Any) -> str:
    """Structured content as compact JSON text (what JSON cannot hold, as its str)."""
    return json.dumps(content, ensure_ascii=False, default=str)


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
