"""`OriginCheck`: what changes something comes from this server's page or a trusted origin, as JSON.

Cross-site request forgery: any page the user visits can make their browser
POST to 127.0.0.1 without asking anyone first — a `<form enctype="text/plain">`
or `fetch(url, {mode: "no-cors", body})` is a CORS "simple request", sent with
no preflight. The page never reads the answer, but the chat would run (the
user's key spent, their tools run) and held calls could be approved. So every
request but GET, HEAD and OPTIONS (which change nothing here) must:

1. come from this server's own origin or one of the trusted ones (`cors_origins`),
   as the browser tells: `Sec-Fetch-Site: same-origin` or `none` (typed by the
   user) passes, any other value needs an `Origin` that is trusted. A browser
   that sends no `Sec-Fetch-Site` is judged by its `Origin`: this server's own
   (the same host and port as the Host header) or a trusted one. A request with
   neither header comes from no browser (curl, a server, Node) and passes;
2. carry JSON (`Content-Type: application/json`): a page on another origin can
   send that only after a CORS preflight, which this server grants to the
   trusted origins alone.

A refusal is 403 `{"error": ...}` saying which rule the request broke.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

import attrs
from starlette.requests import Request
from starlette.responses import Response

from toolreel.core.record import Value

from ._guard import refusal

#: Methods that change nothing, so any origin may send them (their answers stay unreadable
#: to other origins: no CORS headers but for the trusted ones).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: What `Sec-Fetch-Site` says for a request from this origin, or one the user made directly.
OWN_SITES = frozenset({"same-origin", "none"})
#: The one body type the routes take.
JSON_TYPE = "application/json"


def _same_host(origin: str, host: str | None) -> bool:
    """Whether `origin` (scheme://host[:port]) names the host and port of the Host header."""
    if host is None:
        return False
    try:
        netloc = urlsplit(origin).netloc
    except ValueError:
        return False
    return netloc != "" and netloc.lower() == host.strip().lower()


def _shown(header: str | None) -> str:
    """A header's value as a refusal quotes it (cut short)."""
    return "none" if header is None else repr(header[:100])


@attrs.frozen(repr=False, eq=False)
class OriginCheck(Value):
    """403 for a request that changes something from another origin, or without a JSON body."""

    trusted: frozenset[str]

    @classmethod
    def of(cls, origins: Iterable[str]) -> OriginCheck:
        """Trusting `origins` (e.g. "http://localhost:3000") besides the server's own."""
        return cls(trusted=frozenset(origin.rstrip("/").lower() for origin in origins))

    def __call__(self, request: Request) -> Response | None:
        """The refusal, or None when the request may go on."""
        if request.method in SAFE_METHODS:
            return None
        headers = request.headers
        origin, site = headers.get("origin"), headers.get("sec-fetch-site")
        if not self._from_trusted_page(origin, site, headers.get("host")):
            return refusal(
                403,
                f"a request from another site is refused (Origin {_shown(origin)}, "
                f"Sec-Fetch-Site {_shown(site)}): only this server's page and the origins "
                "given with --cors-origin (app(cors_origins=...)) may call the API",
            )
        given = headers.get("content-type", "")
        if given.split(";")[0].strip().lower() != JSON_TYPE:
            return refusal(
                403,
                f"{request.method} takes a JSON body (Content-Type: {JSON_TYPE}), "
                f"not {given[:100]!r}",
            )
        return None

    def _from_trusted_page(self, origin: str | None, site: str | None, host: str | None) -> bool:
        """Whether the browser's headers say the request comes from a page allowed to send it."""
        if origin is not None and origin.lower() in self.trusted:
            return True
        if site is not None:
            return site.lower() in OWN_SITES
        return origin is None or _same_host(origin, host)
