"""An OpenAI-compatible server that refuses `"content": null` gets `""` instead, learnt once.

OpenAI documents an assistant message's `content` as optional when it has
`tool_calls`, and sends null there itself; most servers take it back. Some
local ones refuse it: llama-cpp-python's server answers 500, others 400 or
422 with a message about the content. With `OpenAICodec(null_content="auto")`
(the default), a call that fails so — status 400, 422 or 500, a message that
names "content", "null" or "none", and a request that held a null content —
is sent again at once with `""` there, and the model sends `""` from then on
(its codec becomes `null_content="empty"`). Only once: if `""` is refused too,
that failure is the call's, for the retry policy to judge.
`null_content="null"` never changes; "empty" sends `""` from the start.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import attrs

from toolreel.core import ModelCallFailed, ModelEvent, ModelRequest

from .._redact import logger
from ._http import HttpModel
from ._openai import OpenAICodec

log = logger(__name__)

#: The statuses a server refusing a null content has been seen to answer with.
REFUSING = frozenset({400, 422, 500})
#: Words of which a refusal's message names at least one (lower case).
NAMED = ("content", "null", "none")


class NullContentFallback(HttpModel):
    """An `HttpModel` over an `OpenAICodec` that learns to send `""` where null is refused."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The call's events; a refusal of null content is answered by one call with `""`."""
        first = True
        async for event in super().stream(request):
            if first and isinstance(event, ModelCallFailed):
                empty = self._instead(request, event)
                if empty is not None:
                    self.codec = empty
                    log.info('null content refused (%s): sending "" from now on', event.message)
                    async for again in super().stream(request):
                        yield again
                    return
            first = False
            yield event

    def _instead(self, request: ModelRequest, failure: ModelCallFailed) -> OpenAICodec | None:
        """The codec sending `""`, if `failure` may be the server refusing `request`'s null."""
        codec = self.codec
        if not isinstance(codec, OpenAICodec) or codec.null_content != "auto":
            return None
        words = failure.message.lower()
        if failure.status not in REFUSING or not any(word in words for word in NAMED):
            return None
        held = any(
            message["role"] == "assistant" and message["content"] is None
            for message in codec.messages(request)
        )
        return attrs.evolve(codec, null_content="empty") if held else None
