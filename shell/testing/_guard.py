"""The network guard: HTTP calls to anything but this machine fail loudly during tests."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from toolreel.core import ToolreelError

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
#: The client libraries whose transports are guarded: httpx2 (toolreel's, the SDKs'), and
#: httpx wherever it is installed (a test's own code may still use it).
LIBRARIES = ("httpx2", "httpx")


class NetworkBlocked(ToolreelError, RuntimeError):
    """A test tried to reach a real provider."""


@contextmanager
def guard_network() -> Iterator[list[str]]:
    """Refuse non-local HTTP requests made through httpx2 or httpx; yields the refused URLs."""
    blocked: list[str] = []

    def check(request: Any) -> None:
        if request.url.host not in LOCAL_HOSTS:
            url = f"{request.url.scheme}://{request.url.host}{request.url.path}"
            blocked.append(url)
            raise NetworkBlocked(f"toolreel offline guard: real call to {url} refused")

    with ExitStack() as guards:
        for name in LIBRARIES:
            if importlib.util.find_spec(name) is not None:
                guards.enter_context(_guarded(importlib.import_module(name), check))
        yield blocked


@contextmanager
def _guarded(library: Any, check: Callable[[Any], None]) -> Iterator[None]:
    """`library`'s two transports check each request first (restored on exit)."""
    async_send = library.AsyncHTTPTransport.handle_async_request
    sync_send = library.HTTPTransport.handle_request

    async def guarded_async(self: Any, request: Any) -> Any:
        check(request)
        return await async_send(self, request)

    def guarded_sync(self: Any, request: Any) -> Any:
        check(request)
        return sync_send(self, request)

    library.AsyncHTTPTransport.handle_async_request = guarded_async
    library.HTTPTransport.handle_request = guarded_sync
    try:
        yield
    finally:
        library.AsyncHTTPTransport.handle_async_request = async_send
        library.HTTPTransport.handle_request = sync_send
