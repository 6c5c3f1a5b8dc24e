"""Images from the caller's side: `image(...)` builds an `ImagePart` from a file, bytes or URL,
and a tool that returns images gets a result with images (`ToolOutput`).

    await client.query("What is in this picture?", images=["photo.jpg"])

    @tool
    def screenshot() -> ImagePart:              # or [text, image, ...]
        return image(Path("shot.png"))

A prompt's images and a tool's follow its text (core/_content.py). What each
provider takes, and what is refused, is told in adapters/_providers/_images.py.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import attrs

from toolreel.core import ConfigError, ImagePart, PromptSubmitted
from toolreel.core.images import MEDIA_TYPES
from toolreel.core.record import Value

#: What `image()` takes: an `ImagePart`, image bytes, an http(s) or data: URL, or a file path.
ImageSource: TypeAlias = ImagePart | bytes | str | os.PathLike[str]


def image(source: ImageSource, *, media_type: str | None = None) -> ImagePart:
    """An `ImagePart` from a file path, bytes, an http(s) URL or a `data:` URL.

    The media type is read from the bytes (PNG, JPEG, GIF, WebP) unless given; for
    a URL it comes from the name's extension. A missing or empty file, or bytes
    that are no such image, raise `ConfigError`.
    """
    if isinstance(source, ImagePart):
        return source
    if isinstance(source, bytes | bytearray):
        return ImagePart.of(bytes(source), media_type)
    if isinstance(source, str) and source.startswith(("http://", "https://")):
        return ImagePart(media_type=media_type or _guessed(source), url=source)
    if isinstance(source, str) and source.startswith("data:"):
        return _from_data_url(source, media_type)
    if isinstance(source, str | os.PathLike):
        return _from_path(Path(source), media_type)
    raise ConfigError("image", type(source).__name__, "a path, bytes, a URL or an ImagePart")


def images(sources: Iterable[ImageSource] | None) -> tuple[ImagePart, ...]:
    """`image()` of each source (none: no images)."""
    return tuple(image(source) for source in sources or ())


def _from_path(path: Path, media_type: str | None) -> ImagePart:
    """An image read from a file (`ConfigError` naming the path if it cannot be)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError("image", str(path), f"a readable image file ({exc.strerror})") from exc
    if not data:
        raise ConfigError("image", str(path), "an image file, not an empty one")
    if media_type is None and (guess := mimetypes.guess_type(path.name)[0]) in MEDIA_TYPES:
        media_type = guess
    return ImagePart.of(data, media_type)


def _from_data_url(url: str, media_type: str | None) -> ImagePart:
    """An image from a base64 `data:` URL."""
    head, _, payload = url.partition(",")
    if not head.endswith(";base64"):
        raise ConfigError("image", head + ",...", "a base64 data: URL (data:image/png;base64,...)")
    try:
        data = base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise ConfigError("image", head + ",...", "a data: URL of valid base64") from exc
    return ImagePart.of(data, media_type or head[len("data:") : -len(";base64")])


def _guessed(url: str) -> str:
    """The media type of a URL by its extension (`ConfigError` when it names none)."""
    guess = mimetypes.guess_type(url.split("?", 1)[0])[0]
    if guess not in MEDIA_TYPES:
        raise ConfigError("image", url, "a URL ending .png/.jpg/.gif/.webp, or give media_type")
    return guess


#: A prompt: its text, or (pydantic-ai's convention) a sequence of texts and images.
Prompt: TypeAlias = str | Sequence[str | ImagePart]


def submitted(prompt: Prompt, images: Iterable[ImagePart] = ()) -> PromptSubmitted:
    """The event a prompt makes: a str is its text; in a sequence of texts and images the
    texts are joined by newlines (as a tool's are) and its images come before `images`.

    `ConfigError` for any other prompt, or text that is not valid Unicode (core/_text.py).
    """
    if isinstance(prompt, str):
        return PromptSubmitted(text=prompt, images=tuple(images))
    if not isinstance(prompt, list | tuple) or not all(
        isinstance(part, str | ImagePart) for part in prompt
    ):
        raise ConfigError("prompt", _described(prompt), _PROMPT)
    text = "\n".join(part for part in prompt if isinstance(part, str))
    found = tuple(part for part in prompt if isinstance(part, ImagePart))
    return PromptSubmitted(text=text, images=(*found, *images))


_PROMPT = "a str, or a list of str and ImagePart (the text, and images that follow it)"


def _described(prompt: object) -> object:
    """A refused prompt as its message shows it: the value, or the type of each part of a list."""
    if isinstance(prompt, list | tuple):
        return f"[{', '.join(type(part).__name__ for part in prompt)}]"
    return prompt


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolOutput(Value):
    """A tool's result that carries images: its text and the images that follow it."""

    text: str
    images: tuple[ImagePart, ...]


def tool_output(value: Any, text_of: Any) -> ToolOutput | None:
    """A tool's return value with images as a `ToolOutput`; None when it has no image.

    An `ImagePart` alone, or a list/tuple mixing text (or other values, as
    `text_of` turns them into text) and images: the texts joined by newlines.
    """
    if isinstance(value, ImagePart):
        return ToolOutput(text="", images=(value,))
    if not isinstance(value, list | tuple) or not any(isinstance(v, ImagePart) for v in value):
        return None
    items: Sequence[Any] = value
    texts = [text_of(item) for item in items if not isinstance(item, ImagePart)]
    found = tuple(item for item in items if isinstance(item, ImagePart))
    return ToolOutput(text="\n".join(texts), images=found)
