"""`TokenCheck`: with an access token, every request must carry it (a server off loopback).

`toolreel serve --host 0.0.0.0` lets the network in; the token keeps out
whoever was not given it. A request carries it as `Authorization: Bearer
<token>`, or as the cookie a browser got by opening the link the server printed
(`/?token=<token>`): that request is answered with a redirect to the same page
without the token in its address (so it stays out of history and Referer) and
sets the cookie, HttpOnly (no script reads it) and SameSite=Strict (no other site's
request carries it). The cookie's name holds the port, so two servers on one
host keep theirs apart. Tokens are compared in constant time.

Anything else is 401 `{"error": ...}` with `WWW-Authenticate: Bearer`; the
token never appears in an answer.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlencode

import attrs
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from toolreel.core.record import Value
from toolreel.shell.engine import checked_token

from ._guard import refusal

#: The query parameter of the link the server prints.
TOKEN_PARAMETER = "token"
BEARER = "bearer "


def cookie_name(request: Request) -> str:
    """The token cookie's name for the port the request was sent to."""
    port = request.url.port
    return f"toolreel_token_{port}" if port else "toolreel_token"


def _matches(given: str | None, token: str) -> bool:
    """Whether `given` is the token, compared in constant time."""
    return given is not None and hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), token.encode()
    )


@attrs.frozen(repr=False, eq=False)
class TokenCheck(Value):
    """401 for a request without the access token; the token link's redirect sets the cookie."""

    token: str = attrs.field(converter=checked_token, repr=False)

    def __call__(self, request: Request) -> Response | None:
        """The refusal or the redirect, or None when the request carries the token."""
        header = request.headers.get("authorization", "")
        if header[: len(BEARER)].lower() == BEARER and _matches(
            header[len(BEARER) :].strip(), self.token
        ):
            return None
        if _matches(request.cookies.get(cookie_name(request)), self.token):
            return None
        linked = request.query_params.get(TOKEN_PARAMETER)
        if request.method == "GET" and _matches(linked, self.token):
            return self._remembered(request)
        wrong = header or linked is not None or cookie_name(request) in request.cookies
        return refusal(
            401,
            ("the access token is wrong" if wrong else "this server needs its access token")
            + ": send 'Authorization: Bearer <token>', or open the link with ?token= "
            "that toolreel serve printed",
            headers={"WWW-Authenticate": "Bearer"},
        )

    def _remembered(self, request: Request) -> Response:
        """A redirect to the same address without the token, setting the cookie."""
        kept = [(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_PARAMETER]
        path = "/" + request.url.path.lstrip("/")  # never "//host": a redirect elsewhere
        location = path + (f"?{urlencode(kept)}" if kept else "")
        redirect = RedirectResponse(location, status_code=303)
        redirect.set_cookie(
            cookie_name(request),
            self.token,
            path=request.scope.get("root_path", "") or "/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return redirect
