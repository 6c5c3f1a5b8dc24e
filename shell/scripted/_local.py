"""A tiny HTTP/1.1 server on 127.0.0.1, in a background thread, for model stand-ins.

It reads requests off keep-alive connections and hands each to an answering
function; the scripted model server and the tests' fault server differ only
in how they answer.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

import attrs

from toolreel.core.record import Value

__all__ = ["Answer", "LocalServer", "Request"]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Request(Value):
    """One request as read: its path, its headers (names lowercased) and its body."""

    path: str
    headers: dict[str, str]
    body: bytes


#: Answers one request on `writer`; False when the connection must end.
Answer = Callable[[Request, asyncio.StreamWriter], Awaitable[bool]]


async def read_request(reader: asyncio.StreamReader) -> Request:
    """The next request on a connection (IncompleteReadError when it closes)."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in head[1:] if line)
    }
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Request(path=head[0].split(" ")[1], headers=headers, body=body)


class LocalServer:
    """Serves on a free port of 127.0.0.1 from `start()` to `stop()`; bounded waits only."""

    def __init__(self, answer: Answer) -> None:
        """Answer each request with `answer` once started."""
        self.answer = answer
        self.connections = 0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def start(self) -> None:
        """Start serving (returns once the port is known, or after 10 s)."""
        self._thread.start()
        self._ready.wait(10)

    def stop(self) -> None:
        """Stop serving and close every connection."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _main(self) -> None:
        """Serve until told to stop, then cancel every connection."""
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer requests on one keep-alive connection until an answer ends it."""
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            while await self.answer(await read_request(reader), writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
