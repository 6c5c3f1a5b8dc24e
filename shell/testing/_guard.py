"""The network guard: HTTP calls to anything but this machine fail loudly during tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from toolreel.core import ToolreelError

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class NetworkBlocked(ToolreelError, RuntimeError):
    """A test tried to reach a real provider."""


@contextmanager
def guard_network() -> Iterator[list[str]]:
    """Refuse non-local HTTP requests made through httpx; yields the refused URLs."""
    blocked: list[str] = []
    async_send = httpx.AsyncHTTPTransport.handle_async_request
    sync_send = httpx.HTTPTransport.handle_request

    def check(request: httpx.Request) -> None:
        if request.url.host not in LOCAL_HOSTS:
            url = f"{request.url.scheme}://{request.url.host}{request.url.path}"
            blocked.append(url)
            raise NetworkBlocked(f"toolreel offline guard: real call to {url} refused")

    async def guarded_async(self: Any, request: httpx.Request) -> httpx.Response:
        check(request)
        return await async_send(self, request)

    def guarded_sync(self: Any, request: httpx.Request) -> httpx.Response:
        check(request)
        return sync_send(self, request)

    httpx.AsyncHTTPTransport.handle_async_request = guarded_async  # type: ignore[method-assign]
    httpx.HTTPTransport.handle_request = guarded_sync  # type: ignore[method-assign]
    try:
        yield blocked
    finally:
        httpx.AsyncHTTPTransport.handle_async_request = async_send  # type: ignore[method-assign]
        httpx.HTTPTransport.handle_request = sync_send  # type: ignore[method-assign]
