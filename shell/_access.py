"""Who may call a served loop (`toolreel serve`, `mcp-serve`, `a2a-serve`): one set of rules.

On loopback only this machine reaches a server; off it, every request must
carry an access token: the one given, else one made at start. A token is
RFC 6750's token68 (what a Bearer header and a cookie carry as they are) and at
least `MIN_TOKEN_LENGTH` characters; a `ConfigError` about one never shows it.
"""

from __future__ import annotations

import ipaddress
import re
import secrets

from toolreel.core import ConfigError

#: RFC 6750's token68: what a Bearer header and a cookie value both carry as they are.
TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9._~+/-]+=*")
#: A token shorter than this is guessable.
MIN_TOKEN_LENGTH = 16


def checked_token(token: str) -> str:
    """`token` if it can serve as an access token (a `ConfigError` that never shows it)."""
    if len(token) < MIN_TOKEN_LENGTH or not TOKEN_CHARACTERS.fullmatch(token):
        raise ConfigError(
            "token",
            "***",
            f"an access token is at least {MIN_TOKEN_LENGTH} characters of letters, digits "
            "and -._~+/ (e.g. python -c 'import secrets; print(secrets.token_urlsafe())')",
        )
    return token


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 bracketed or not) is `localhost` or loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False


def access_token(host: str, token: str | None) -> str | None:
    """The token requests to a server on `host` must carry: the one given (checked); off
    loopback, else one made now; on loopback without one, None."""
    if token is not None:
        return checked_token(token)
    return None if is_loopback(host) else secrets.token_urlsafe(32)
