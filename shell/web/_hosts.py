"""`HostCheck`: only requests naming this server in their Host header are served (DNS rebinding).

A page on `evil.example` whose DNS name is switched to 127.0.0.1 reaches the
local server with its own name in the Host header; serving only the names the
server is known by stops it. The names served: `127.0.0.1`, `localhost` and
`[::1]` always, plus those given (`toolreel serve` adds its `--host` and each
`--allowed-host`). The port is not compared: the name is what a rebinding page
cannot fake. Given names may be:

- a name or an IP address (`[::1]` or `::1`; IP addresses compare as addresses);
- `0.0.0.0` or `::` (what a server listening on every address is bound to):
  any IP address is served — an address literal cannot be rebound, while names
  still have to be listed;
- `*`: any host (behind a proxy that checks it).

Anything else is 400 `{"error": ...}` naming the host.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

import attrs
from starlette.requests import Request
from starlette.responses import Response

from toolreel.core.record import Value

from ._guard import refusal

#: The names a local server is always reachable by.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: A Host header: a name or IPv4 address, or a bracketed IPv6 address; then maybe a port.
HOST_HEADER = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\[\]:/@\s]+)(?::\d*)?")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(name: str) -> Address | None:
    """The IP address `name` spells (`[::1]` or `::1`), or None for a host name."""
    try:
        return ipaddress.ip_address(name.removeprefix("[").removesuffix("]"))
    except ValueError:
        return None


def host_name(header: str | None) -> str | None:
    """The host a Host header names, lower-cased and without its port; None if malformed."""
    if header is None:
        return None
    match = HOST_HEADER.fullmatch(header.strip())
    return match["host"].lower() if match else None


@attrs.frozen(repr=False, eq=False)
class AllowedHosts(Value):
    """The hosts a server answers to (see the module docstring for the forms)."""

    names: frozenset[str]
    addresses: frozenset[Address]
    any_address: bool
    any_host: bool

    @classmethod
    def of(cls, given: Iterable[str]) -> AllowedHosts:
        """The loopback names and `given`."""
        names = {name.strip().lower() for name in (*LOOPBACK_HOSTS, *given)} - {""}
        addresses = {a for a in map(_address, names) if a is not None}
        return cls(
            names=frozenset(n for n in names if _address(n) is None),
            addresses=frozenset(a for a in addresses if not a.is_unspecified),
            any_address=any(a.is_unspecified for a in addresses),
            any_host="*" in names,
        )

    def allow(self, host: str) -> bool:
        """Whether the host a request names (`host_name`) is served."""
        if self.any_host or host in self.names:
            return True
        address = _address(host)
        return address is not None and (self.any_address or address in self.addresses)


@attrs.frozen(repr=False, eq=False)
class HostCheck(Value):
    """400 for a request whose Host header is missing or names another server."""

    hosts: AllowedHosts

    def __call__(self, request: Request) -> Response | None:
        """The refusal, or None when the host is served."""
        header = request.headers.get("host")
        host = host_name(header)
        if host is not None and self.hosts.allow(host):
            return None
        named = "no Host header" if header is None else f"the host {header[:100]!r}"
        return refusal(
            400,
            f"{named} is not served here: only this server's own names are "
            "(toolreel serve --allowed-host NAME, or app(allowed_hosts=...), adds one)",
        )
