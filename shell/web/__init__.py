"""toolreel.web: the loop served to a browser (`pip install toolreel[web]`: Starlette, uvicorn).

- `app(options, journal=..., model=...)`: a Starlette app (mount it in FastAPI or
  Starlette) with `POST /api/chat` (the AI SDK UI message stream `useChat()`
  reads), `POST /api/events` (a plain JSON event stream), `POST /api/agui` (an
  AG-UI `RunAgentInput` in, the AG-UI event stream out; the `agui` extra), `GET /api/sessions`,
  `GET /api/sessions/{id}` and the page at `/`. With `sessions=
  toolreel.temporal.WorkflowChats(client)` each chat is a session workflow on
  Temporal instead, served the same way (its text streamed as the model writes).
- `chat_response(options, prompt, ...)`: one turn as a streaming response, for
  your own routes; `ui_message_stream(client.events())` and
  `event_stream(client.events(), session_id=...)`: the SSE text of any turn.
- `approval_responses(messages)` and `approval_response(options, session_id,
  decisions, message_id=...)`: useChat's `addToolApprovalResponse` answers, read
  from a request's messages and applied to the paused turn, streamed as the
  continuation of the client's assistant message (what `/api/chat` does).
- The encoders themselves, pure folds over the loop's notices, are the public
  submodule `toolreel.web.streams` (`ui_start`, `ui_parts`, `plain_events`, `sse`, ...).

`app` answers only to its own host names, takes a POST only as JSON from its
own page or `cors_origins`, bounds bodies, and with `token=` wants the token on
every request (docs/guides/security.md). `toolreel serve` runs `app` with uvicorn on
127.0.0.1 (off loopback: with a token).
"""

from __future__ import annotations

from ._app import app
from ._approvals import ApprovalDecision, ApprovalResponses, approval_responses
from ._respond import approval_response, chat_response, event_stream, ui_message_stream

__all__ = [
    "ApprovalDecision",
    "ApprovalResponses",
    "app",
    "approval_response",
    "approval_responses",
    "chat_response",
    "event_stream",
    "ui_message_stream",
]
