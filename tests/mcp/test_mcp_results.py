"""What the model reads of an MCP tool result (shell/mcp/_results.py, rules 1-5)."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("mcp", reason="toolreel.mcp needs the MCP SDK: pip install 'toolreel[mcp]'")

import mcp.types as t
from returns.result import Failure, Success

from toolreel.core import ImagePart
from toolreel.mcp import result_text
from toolreel.shell.engine import ToolOutput

PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
ENCODED = base64.b64encode(PIXEL).decode()


def text(value: str) -> t.TextContent:
    return t.TextContent(type="text", text=value)


def image(data: str = ENCODED, mime: str = "image/png") -> t.ImageContent:
    return t.ImageContent(type="image", data=data, mime_type=mime)


def blob(mime: str | None, data: str = ENCODED) -> t.EmbeddedResource:
    resource = t.BlobResourceContents(uri="file:///shot", blob=data, mime_type=mime)
    return t.EmbeddedResource(type="resource", resource=resource)


def read(*blocks: t.ContentBlock, error: bool = False, structured: object = None) -> object:
    result = t.CallToolResult(content=list(blocks), is_error=error, structured_content=structured)
    return result_text("shot", result)


def test_text_blocks_join_and_structured_content_stands_in_for_none() -> None:
    assert read(text("a"), text("b")) == Success("a\nb")
    assert read(structured={"high": 21}) == Success('{"high": 21}')
    assert read(text("21"), structured={"high": 21}) == Success("21")  # the text says it


def test_an_error_result_is_its_text_or_a_line_naming_the_tool() -> None:
    assert read(text("no such file"), error=True) == Failure("no such file")
    assert read(error=True) == Failure("MCP tool shot failed (the server gave no message)")


def test_images_follow_the_text_as_images_of_the_result() -> None:
    shown = ImagePart(media_type="image/png", data=PIXEL)
    assert read(text("a shot"), image(), blob("image/png")) == Success(
        ToolOutput(text="a shot", images=(shown, shown))
    )
    assert read(image()) == Success(ToolOutput(text="", images=(shown,)))  # no text: no text


@pytest.mark.parametrize(
    ("block", "placeholder"),
    [
        (image(mime="image/bmp"), "[image (image/bmp) not shown]"),
        (image(data="not base64!"), "[image (image/png) not shown]"),
        (
            t.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
            "[audio (audio/wav) not shown]",
        ),
        (blob("application/pdf"), "[binary resource file:///shot (application/pdf)]"),
        (blob(None), "[binary resource file:///shot (unknown type)]"),
        (t.ResourceLink(type="resource_link", uri="file:///a", name="a"), "[resource file:///a]"),
    ],
)
def test_what_cannot_be_shown_is_a_line_naming_it(block: t.ContentBlock, placeholder: str) -> None:
    assert read(text("see"), block) == Success(f"see\n{placeholder}")


def test_an_error_results_images_are_named_not_shown() -> None:
    assert read(text("bad"), image(), error=True) == Failure("bad\n[image (image/png) not shown]")
