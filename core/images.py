"""What an image in a conversation may be: the media types taken and the size allowed.

An `ImagePart` (in `toolreel.core`) holds one image of `MEDIA_TYPES`, of at most
`MAX_IMAGE_BYTES` bytes (or a URL): making one of anything else is a `ConfigError`
naming the field.
"""

from __future__ import annotations

from ._content import MAX_IMAGE_BYTES, MEDIA_TYPES

__all__ = ["MAX_IMAGE_BYTES", "MEDIA_TYPES"]
