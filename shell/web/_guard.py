"""`Guard`: the checks a request passes before any route sees it, and how a refusal looks.

The served loop runs the user's tools and spends their key, so who may drive it
is decided here, once, for every route (`app` stacks them; docs/guides/security.md):

1. the Host header names this server (`HostCheck`, shell/web/_hosts.py): a page
   on a rebinding DNS name reaches 127.0.0.1 but names itself: 400;
2. the caller holds the access token, when the app has one (`TokenCheck`,
   shell/web/_token.py): 401;
3. a request that changes something comes from this server's own page or an
   origin given as `cors_origins`, with a JSON body (`OriginCheck`,
   shell/web/_origins.py): a cross-site form or `no-cors` fetch: 403.

A check reads only the request line and headers; it answers a `Response` (the
refusal, or the token link's redirect) or None to let the request through. A
refusal is `{"error": message}`, as every error of the app.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from toolreel.core.record import Value

#: A check: the response that ends the request here, or None to pass it on.
Check = Callable[[Request], Response | None]


def refusal(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """`{"error": message}` with `status`: how every check says no."""
    return JSONResponse({"error": message}, status_code=status, headers=headers)


@attrs.frozen(repr=False, eq=False)
class Guard(Value):
    """ASGI middleware running `checks` in order on each HTTP request; the first answer wins."""

    app: ASGIApp
    checks: Sequence[Check] = attrs.field(kw_only=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer with a check's response, or pass the request on untouched."""
        if scope["type"] == "http":
            request = Request(scope)
            for check in self.checks:
                answer = check(request)
                if answer is not None:
                    await answer(scope, receive, send)
                    return
        await self.app(scope, receive, send)
