"""Which HTTP client library a client or transport belongs to: httpx2, or httpx.

toolreel sends through httpx2 (pydantic's maintained fork of httpx, the same
API under `import httpx2`). A caller may still bring an `httpx.AsyncClient`
(or an httpx transport) while both libraries exist; requests, timeouts and
the exceptions to map must then be that library's own, since neither accepts
the other's objects. httpx is not a dependency: an object of httpx's exists
only if its maker imported httpx, so the checks here look in `sys.modules`
and never import httpx (nor httpx2 for a question about httpx) themselves.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import httpx
    import httpx2

    #: A caller's own client: httpx2's, or httpx's while both exist.
    AsyncClient: TypeAlias = httpx2.AsyncClient | httpx.AsyncClient
    #: A transport for the pools (tests pass a `MockTransport`): either library's.
    AsyncTransport: TypeAlias = httpx2.AsyncBaseTransport | httpx.AsyncBaseTransport

#: The libraries whose clients are accepted, the one toolreel uses first.
LIBRARIES = ("httpx2", "httpx")


def is_async_client(value: object) -> bool:
    """Whether `value` is an `AsyncClient` of httpx2 or httpx (only loaded ones are asked)."""
    for name in LIBRARIES:
        library = sys.modules.get(name)
        if library is not None and isinstance(value, library.AsyncClient):
            return True
    return False


def library_of(value: object | None) -> ModuleType:
    """httpx for a client or transport of httpx's, else httpx2 (imported here if need be)."""
    httpx = sys.modules.get("httpx")
    if (
        value is not None
        and httpx is not None
        and isinstance(value, httpx.AsyncClient | httpx.AsyncBaseTransport)
    ):
        return httpx
    import httpx2  # noqa: PLC0415 - loaded by the first HTTP model, not with toolreel

    return httpx2
