"""toolreel.a2a: a toolreel agent as an A2A server (`pip install toolreel[a2a]`: a2a-sdk).

`app(options, journal=...)` is the ASGI app, `serve(...)` runs it with uvicorn,
`toolreel a2a-serve` from the command line. Each message is a turn of the
journaled session its contextId names; a task is one turn (`<contextId>-<n>`),
read back from the journal after a restart; held calls make the task
`input-required` until a message decides them. docs/guides/a2a.md.
"""

from __future__ import annotations

from ._app import app, serve

__all__ = ["app", "serve"]
