"""The stream encoders `toolreel.web` is made of: pure folds over a turn's notices.

For your own transport (a WebSocket, another framework) when `app`,
`chat_response`, `ui_message_stream` and `event_stream` do not fit. Each fold
takes its stream's state and one item of `Client.events()` and returns the new
state and the parts to send; none does I/O.

- The AI SDK UI message stream (what `useChat()` reads): `ui_start`, `ui_parts`,
  `ui_error` over a `UIStream`, each part a `Part` (JSON data) sent as `sse(part)`,
  ended by `DONE`, with `UI_STREAM_HEADERS`; `finish_reason` is a `Finish` as the
  AI SDK names it.
- The plain JSON event stream (`POST /api/events`): `plain_start`, `plain_events`,
  `plain_error` over a `PlainStream`, each a `PlainEvent` (a kind and its data) sent
  as `sse_event(kind, data)`, with `EVENT_STREAM_HEADERS`.
"""

from __future__ import annotations

from ._event_stream import (
    EVENT_STREAM_HEADERS,
    PlainEvent,
    PlainStream,
    plain_error,
    plain_events,
    plain_start,
    sse_event,
)
from ._ui_stream import (
    DONE,
    UI_STREAM_HEADERS,
    Part,
    UIStream,
    finish_reason,
    sse,
    ui_error,
    ui_parts,
    ui_start,
)

__all__ = [
    "DONE",
    "EVENT_STREAM_HEADERS",
    "UI_STREAM_HEADERS",
    "Part",
    "PlainEvent",
    "PlainStream",
    "UIStream",
    "finish_reason",
    "plain_error",
    "plain_events",
    "plain_start",
    "sse",
    "sse_event",
    "ui_error",
    "ui_parts",
    "ui_start",
]
