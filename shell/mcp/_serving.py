"""`http_app` and `serve`: an `agent_server` over streamable HTTP (an ASGI app) or stdio.

The served agent runs the user's tools and spends their model key, so over
HTTP the rules of `toolreel serve` apply where they fit (docs/guides/security.md):

1. it binds 127.0.0.1 unless told another host;
2. the Host header must name this server (the loopback names, the host
   served, each of `allowed_hosts`; `"*"`: any, behind a proxy that checks it),
   else 421, and a browser's `Origin` must be one of those names, else 403 —
   DNS rebinding; both checks are the SDK's (`TransportSecuritySettings`);
3. with a `token`, every request carries `Authorization: Bearer <token>`
   (compared in constant time), else 401 with `WWW-Authenticate: Bearer`;
   off loopback `serve` requires one (made, and told to `ready`, if not given);
4. a POST body is JSON (else 400) of at most `max_body_bytes` (else 413), the
   SDK's checks.

Not applied: `toolreel serve`'s token cookie and link (an MCP client sends a
header) and its body timeout (uvicorn's own timeouts hold).
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Callable, Sequence
from typing import Any, Literal

import attrs
from mcp.server import Server
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from toolreel.core import ConfigError
from toolreel.core.record import Value
from toolreel.shell.engine import access_token, checked_token

#: The names a local server is always reachable by.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: Where the MCP endpoint is.
MCP_PATH = "/mcp"

Transport = Literal["stdio", "http"]


@attrs.frozen(repr=False, eq=False)
class BearerToken(Value):
    """ASGI middleware: 401 for an HTTP request without `Authorization: Bearer <token>`."""

    app: ASGIApp
    token: str = attrs.field(kw_only=True, repr=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass a request carrying the token on; answer any other with 401."""
        if scope["type"] == "http" and not self._carries(scope):
            refusal = JSONResponse(
                {"error": "this server needs its access token: 'Authorization: Bearer <token>'"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _carries(self, scope: Scope) -> bool:
        """Whether the request's Authorization header holds the token (constant time)."""
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, value = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            value.strip().encode("latin-1", "replace"), self.token.encode()
        )


def http_app(
    server: Server[Any],
    *,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
) -> ASGIApp:
    """`server` over streamable HTTP at `/mcp`: an ASGI app to run or mount (module rules).

    `host` is the address served (its names are allowed besides the loopback
    ones and `allowed_hosts`); run the app with its lifespan (uvicorn does),
    which opens the server's journal and MCP servers.
    """
    if token is not None:
        checked_token(token)
    app: Starlette = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=_security(host, allowed_hosts),
        max_request_body_size=max_body_bytes,
        host=host,
    )
    return app if token is None else BearerToken(app, token=token)


def _security(host: str, allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """The SDK's Host and Origin checks for the names served (`"*"`: no check)."""
    if "*" in allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = {_bracketed(name) for name in (*LOOPBACK_HOSTS, host, *allowed_hosts) if name}
    names -= {"0.0.0.0", "[::]"}  # every address: an address, not a name a Host header holds
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(names | {f"{name}:*" for name in names}),
        allowed_origins=sorted(
            f"{scheme}://{name}{port}"
            for name in names
            for scheme in ("http", "https")
            for port in ("", ":*")
        ),
    )


def _bracketed(name: str) -> str:
    """A host name as a Host header spells it (an IPv6 address in brackets), lower-cased."""
    name = name.strip().lower()
    try:
        address = ipaddress.ip_address(name.removeprefix("[").removesuffix("]"))
    except ValueError:
        return name
    return f"[{address}]" if address.version == 6 else str(address)


async def serve(
    server: Server[Any],
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    allowed_hosts: Sequence[str] = (),
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
    ready: Callable[[str, str | None], object] | None = None,
) -> None:
    """Serve `server` (from `agent_server`) over stdio or HTTP until cancelled or stdin ends.

    Over HTTP, off loopback a token is required: the one given, else one made
    here. `ready(url, token)` is called once the server listens (HTTP: the
    endpoint's URL, its real port when `port=0`, and the token if one is needed).
    """
    if transport == "stdio":
        from mcp.server.stdio import stdio_server  # noqa: PLC0415 - only for stdio

        async with stdio_server() as (read, write):
            if ready is not None:
                ready("stdio", None)
            await server.run(read, write, server.create_initialization_options())
        return
    if transport != "http":
        raise ConfigError("transport", transport, "'stdio' or 'http'")
    token = access_token(host, token)
    app = http_app(
        server, host=host, allowed_hosts=allowed_hosts, token=token, max_body_bytes=max_body_bytes
    )
    await _uvicorn(app, host, port, token, ready)


async def _uvicorn(
    app: ASGIApp,
    host: str,
    port: int,
    token: str | None,
    ready: Callable[[str, str | None], object] | None,
) -> None:
    """Run `app` with uvicorn on host:port, telling `ready` the URL once it listens."""
    import uvicorn  # noqa: PLC0415 - the SDK's dependency, only for HTTP

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.create_server((host.strip("[]"), port), family=family) as sock:
        bound = sock.getsockname()[1]
        where = f"[{host.strip('[]')}]" if ":" in host else host
        if ready is not None:
            ready(f"http://{where}:{bound}{MCP_PATH}", token)
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        await uvicorn.Server(config).serve(sockets=[sock])
