"""Content beside text: the images a prompt or a tool result carries.

- `ImagePart`: one image, as bytes (`data`) or as an http(s) `url`, with its
  media type (image/png, image/jpeg, image/gif or image/webp: the four every
  provider that takes images accepts).

A message or a result holds its text as a plain `str` and its images in an
`images` tuple beside it (empty for text-only sessions, which pay nothing);
the text comes first, the images follow it, in order. Records stay deeply
immutable and hashable: `data` is `bytes`, never a base64 string (the journal
writes it as base64; adapters/_serde.py). `repr` shows the size, never the bytes,
so an image never floods a log or an error message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from ._errors import ConfigError
from ._record import Value
from ._text import surrogate_at

#: The media types an `ImagePart` may have.
MEDIA_TYPES: frozenset[str] = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

#: The largest image held as bytes: 20 MiB, OpenAI's and Gemini's per-request limit for
#: inline data (Anthropic's API takes 5 MB a image: it answers larger ones with a 400).
MAX_IMAGE_BYTES = 20 * 1024 * 1024

#: Leading bytes that identify each media type (`ImagePart.of` reads them).
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _media_type(_: object, __: object, value: Any) -> None:
    """One of the four image media types every image-taking provider accepts."""
    if value not in MEDIA_TYPES:
        raise ConfigError("media_type", value, f"one of {', '.join(sorted(MEDIA_TYPES))}")


def _data(_: object, __: object, value: Any) -> None:
    """Non-empty bytes, at most `MAX_IMAGE_BYTES` (or None for a URL image)."""
    if value is None:
        return
    if not isinstance(value, bytes) or not value:
        raise ConfigError("data", describe(value), "the image's bytes (non-empty bytes)")
    if len(value) > MAX_IMAGE_BYTES:
        limit = f"at most {MAX_IMAGE_BYTES} bytes (20 MiB); pass a URL for larger images"
        raise ConfigError("data", describe(value), limit)


def _url(_: object, __: object, value: Any) -> None:
    """An http(s) URL (or None for an image held as bytes)."""
    if value is None:
        return
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigError("url", value, "an http:// or https:// URL (pass bytes as `data`)")
    if surrogate_at(value) is not None:
        raise ConfigError("url", value, "a URL of valid Unicode text")


def describe(value: object) -> str:
    """A short stand-in for bytes in messages: `<N bytes>`, never the bytes themselves."""
    return f"<{len(value)} bytes>" if isinstance(value, (bytes, bytearray)) else repr(value)


def _data_repr(value: bytes | None) -> str:
    """`data` in a repr: its size only."""
    return "None" if value is None else describe(value)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ImagePart(Value):
    """An image: exactly one of `data` (its bytes) or `url` (http/https), with its media type."""

    media_type: str = attrs.field(validator=_media_type)
    data: bytes | None = attrs.field(default=None, validator=_data, repr=_data_repr)
    url: str | None = attrs.field(default=None, validator=_url)

    def __attrs_post_init__(self) -> None:
        """Exactly one source: bytes or a URL."""
        if (self.data is None) == (self.url is None):
            given = "both" if self.data is not None else "neither"
            raise ConfigError("ImagePart", given, "exactly one of data (bytes) or url")

    @classmethod
    def of(cls, data: bytes, media_type: str | None = None) -> ImagePart:
        """An image from its bytes, its media type read from its first bytes unless given."""
        if media_type is None:
            media_type = sniff(data)
        return cls(media_type=media_type, data=data)

    @property
    def size(self) -> int | None:
        """The number of bytes held (None for a URL image)."""
        return None if self.data is None else len(self.data)

    def label(self) -> str:
        """A one-line placeholder for transcripts and logs: `[image image/png, 1234 bytes]`."""
        where = f"{self.size} bytes" if self.url is None else self.url
        return f"[image {self.media_type}, {where}]"


def sniff(data: object) -> str:
    """The media type of image bytes, from their signature (`ConfigError` if unknown)."""
    if isinstance(data, bytes):
        for magic, media_type in _MAGIC:
            if data.startswith(magic):
                return media_type
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return "image/webp"
    allowed = f"PNG, JPEG, GIF or WebP bytes (or give media_type, one of {sorted(MEDIA_TYPES)})"
    raise ConfigError("data", describe(data), allowed)


def images_of(value: Iterable[ImagePart]) -> tuple[ImagePart, ...]:
    """Any iterable of images as a tuple, each checked to be an `ImagePart`."""
    held = value if isinstance(value, tuple) else tuple(value)
    for item in held:
        if not isinstance(item, ImagePart):
            raise ConfigError("images", describe(item), "ImagePart values")
    return held
