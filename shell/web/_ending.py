"""Sessions whose response is ending: the next request of the same chat waits for it.

A response gives its session back (its `Client`'s lease) only after the browser
has read the end of the stream, or after the browser left (Stop): a next
message sent at once would find the session still held and be refused (409).
So a response marks its session *ending* when it sends its last chunk or sees
its client leave, and takes the mark off once its `Client` is closed; a
request for a session marked so waits for that (at most `ENDING_WAIT`
seconds) before it opens the session. A session held by a turn that still
runs is not marked: a request for it is refused at once, as before.
"""

from __future__ import annotations

import anyio

#: The longest a request waits for the previous response of its session to close.
ENDING_WAIT = 10.0

_ENDING: dict[str, anyio.Event] = {}


class Ending:
    """One response's mark on its session (at most one mark, taken off by `closed`)."""

    def __init__(self) -> None:
        """Unmarked: nothing waits for this response yet."""
        self._session_id: str | None = None
        self._closed = anyio.Event()

    def mark(self, session_id: str) -> None:
        """The response is ending: requests for `session_id` wait until it is `closed`."""
        if self._session_id is None and not self._closed.is_set():
            self._session_id = session_id
            _ENDING[session_id] = self._closed

    def closed(self) -> None:
        """The response's `Client` is closed: whoever waits goes on."""
        self._closed.set()
        if self._session_id is not None and _ENDING.get(self._session_id) is self._closed:
            del _ENDING[self._session_id]


async def after_ending(session_id: str | None) -> None:
    """Wait (bounded) until the ending response of `session_id`, if any, has closed."""
    if session_id is None:
        return
    event = _ENDING.get(session_id)
    if event is not None:
        with anyio.move_on_after(ENDING_WAIT):
            await event.wait()
