"""PostgreSQL DSNs for people: the password masked wherever one is shown.

Kept apart from `_postgres.py` so that the command line and `open_journal` can
recognise and show a DSN without importing psycopg.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from ._redact import MASK

__all__ = ["SCHEMES", "is_dsn", "passwords", "redacted_dsn"]

#: The URL schemes that name a PostgreSQL journal (libpq's two).
SCHEMES = ("postgresql://", "postgres://")

_URL_PASSWORD = re.compile(r"^(postgres(?:ql)?://[^:@/?#]*:)([^@/?#]*)(@)", re.IGNORECASE)
_KEY_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)


def is_dsn(location: object) -> bool:
    """Whether `location` is a PostgreSQL URL (`postgresql://...`, `postgres://...`)."""
    return isinstance(location, str) and location.lower().startswith(SCHEMES)


def redacted_dsn(dsn: str) -> str:
    """The DSN with its password (in the URL's user part, or a `password=` field) as `***`."""
    dsn = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(3), dsn)
    return _KEY_PASSWORD.sub(lambda m: m.group(1) + MASK, dsn)


def passwords(dsn: str) -> tuple[str, ...]:
    """Every form of the DSN's password a message could repeat (as written, decoded, unquoted),
    longest first."""
    found = [m.group(2) for m in _URL_PASSWORD.finditer(dsn)]
    found += [m.group(2).strip("'") for m in _KEY_PASSWORD.finditer(dsn)]
    forms = {form for value in found for form in (value, unquote(value)) if value}
    return tuple(sorted(forms, key=len, reverse=True))
