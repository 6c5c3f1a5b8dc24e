"""The served loop's rules over HTTP, as ASGI middleware (docs/guides/security.md).

1. the Host header must name this server (the loopback names, the host served,
   each allowed name; `"*"`: any), else 421; a browser's `Origin` must be one
   of those names, else 403 (DNS rebinding);
2. with a token, every request but the agent card's carries
   `Authorization: Bearer <token>` (constant-time compare), else 401;
3. a request body longer than the limit is refused with 413, JSON nested deeper than
   `MAX_JSON_DEPTH` with 400 (read in full before the SDK sees it).
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import attrs
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolreel.core.record import Value
from toolreel.shell.engine import MAX_JSON_DEPTH, json_depth

#: The names a local server is always reachable by.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _name(authority: str) -> str:
    """The host name of a `host[:port]` (an IPv6 address without brackets), lower-cased."""
    return (urlsplit(f"//{authority}").hostname or "").lower()


@attrs.frozen(repr=False, eq=False)
class Guard(Value):
    """ASGI middleware applying the module's rules before the A2A routes see a request."""

    app: ASGIApp
    names: frozenset[str] = attrs.field(kw_only=True)
    token: str | None = attrs.field(kw_only=True, repr=False)
    max_body: int = attrs.field(kw_only=True)
    open_paths: frozenset[str] = attrs.field(kw_only=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass a request that keeps the rules on; answer any other with its refusal."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is None:
            body = await _body(receive, self.max_body)
            if body is None:
                refusal = (413, "the request body is too long")
            elif json_depth(body) > MAX_JSON_DEPTH:  # before the SDK's parser recurses into it
                refusal = (400, f"the body's JSON is nested deeper than {MAX_JSON_DEPTH} levels")
            elif _lone_surrogate(body):  # the SDK would fail encoding it, as an internal error
                refusal = (
                    400,
                    "the body holds text with a lone surrogate (a JSON escape of "
                    "half a pair): send valid Unicode text",
                )
            else:
                await self.app(scope, _replay(body, receive), send)
                return
        status, message = refusal
        extra = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
        await JSONResponse({"error": message}, status_code=status, headers=extra)(
            scope, receive, send
        )

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """Why a request is refused, None when it keeps the rules."""
        if "*" not in self.names:
            if _name(headers.get("host", "")) not in self.names:
                return 421, "this server does not answer to that Host"
            origin = headers.get("origin")
            if origin is not None and _name(urlsplit(origin).netloc) not in self.names:
                return 403, "requests from that Origin are refused"
        if self.token is not None and scope["path"] not in self.open_paths:
            scheme, _, value = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode("latin-1", "replace"), self.token.encode()
            ):
                return 401, "this server needs its access token: 'Authorization: Bearer <token>'"
        return None


#: A JSON escape of a surrogate code point: a body holding none needs no closer look.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _lone_surrogate(body: bytes) -> bool:
    """Whether the JSON `body` holds a string with half a surrogate pair (not valid Unicode)."""
    if _SURROGATE_ESCAPE.search(body) is None:
        return False
    try:
        json.dumps(json.loads(body), ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    except ValueError:  # not JSON: the SDK answers that as the protocol says
        return False
    return False


def host_names(host: str, allowed_hosts: Sequence[str]) -> frozenset[str]:
    """The names a request's Host may give ("*": any)."""
    if "*" in allowed_hosts:
        return frozenset({"*"})
    names = {_name(n) if ":" not in n.strip("[]") else n.strip("[]").lower() for n in allowed_hosts}
    return frozenset({*LOOPBACK_HOSTS, host.strip("[]").lower(), *names} - {"0.0.0.0", "::"})


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, None past `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive_more: Receive) -> Receive:
    """A `receive` giving `body` at once, then what the client sends next (its disconnect)."""
    sent = False

    async def receive() -> Message:
        """The body first, then the client's own messages."""
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive_more()

    return receive
