"""Redaction: the one step every text that leaves the process or is stored passes through.

A `Redactor` knows the configured secrets (API keys) and replaces each, and
every echo of one, with `***`. An echo is any run of `WINDOW` (8) or more
consecutive characters of a key, wherever in the key it starts: servers quote
a key whole, cut (`sk-abc123def4***`) or by its end (`...ABCDEFGH1234567890`).
A run that lies within the key's public prefix (`sk-proj-`, `sk-ant-api03-`:
`PUBLIC_PREFIXES`, what every key of its kind starts with) is no echo; a run
that goes past it is masked whole. Text that shares fewer than 8 characters in
a row with a key is left as it is.

It is applied where text crosses the boundary: events before they reach the
reducer (so the journal, exports, transcripts, notices and errors never hold a
key), log records (`LOG_FILTER`, on the "toolreel" loggers and, once a key is
known, on httpx's and httpcore's: `HTTP_LOGGERS`), and the CLI's messages. An
echo split across stream pieces is caught before that, by holding back the end
of a piece that could still become one (adapters/_held.py, on every model
stream of a run whose keys are known). Keys are cleaned where they enter
(`clean_key`): surrounding whitespace goes, inner whitespace or control
characters are refused.

How echoes are found. Every run of 8 characters of a key holds one of the
key's *anchors*: its 4-character pieces at every 5th position (a run of 8 has
5 starting places for a piece of 4, so one of them is an anchor's). A text
none of whose anchors occurs is clean; each anchor found is grown left and
right while the text keeps following the key, and a run of 8 or more becomes
a mask (overlapping runs merge into one). Cost: an event none of whose texts
holds an anchor is returned as it is — a text shorter than 8 is not even
searched, a longer one costs one substring test per anchor (a 40-character key
has 7); masking itself only runs on texts that hold an echo
(tests/bench/bench_redact.py measures both against the former prefix test).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import attrs

from toolreel.core import ConfigError
from toolreel.core.record import Value

__all__ = [
    "HTTP_LOGGERS",
    "LOG_FILTER",
    "MASK",
    "RedactingFilter",
    "Redactor",
    "clean_key",
    "logger",
    "masked",
]

MASK = "***"
#: A run of this many characters of a key, or more, is an echo of it.
WINDOW = 8
#: Shorter "keys" are placeholders for local servers ("ollama", "none"), not secrets.
MIN_SECRET = WINDOW
#: What keys of a kind all start with (longest first): a run within it alone shows nothing.
PUBLIC_PREFIXES = (
    "sk-ant-admin01-",
    "sk-ant-api03-",
    "sk-svcacct-",
    "sk-or-v1-",
    "sk-admin-",
    "sk-proj-",
    "sk-ant-",
    "sk-",
)
#: An anchor's length, and the distance between two anchors (every run of WINDOW holds one).
ANCHOR = 4
STRIDE = WINDOW - ANCHOR + 1
#: The loggers of the HTTP clients toolreel uses (and the MCP SDK's): their DEBUG records
#: show response headers, which a server may fill with the key it was sent.
HTTP_LOGGERS = (
    "httpx",
    "httpx2",
    *(
        f"{package}{suffix}"
        for package in ("httpcore", "httpcore2")
        for suffix in ("", ".connection", ".http11", ".http2", ".proxy", ".socks")
    ),
)

T = TypeVar("T")


def clean_key(value: str | None, source: str = "api_key") -> str | None:
    """A key stripped of surrounding whitespace (None if nothing is left); a broken one refused.

    Inside, a key is printable ASCII: whitespace or a control character there
    means a mangled value, which would only fail later in an HTTP header (with
    the key in the message). The error never shows the key.
    """
    if value is None:
        return None
    key = value.strip()
    if not all("!" <= char <= "~" for char in key):
        where = "" if source == "api_key" else f" (from {source})"
        raise ConfigError(
            "api_key", MASK, f"an API key is printable ASCII without whitespace inside{where}"
        )
    return key or None


def _public(secret: str) -> int:
    """How many first characters of `secret` every key of its kind shares (0: none known)."""
    for prefix in PUBLIC_PREFIXES:
        if secret.startswith(prefix) and len(prefix) < len(secret):
            return len(prefix)
    return 0


@attrs.frozen(repr=False, eq=False)
class _Anchor(Value):
    """A piece of a secret whose presence in a text may mean an echo around it."""

    text: str
    secret: str
    #: Where `text` starts in the secret.
    position: int
    #: A run must go past this many characters of the secret (its public prefix) to count.
    floor: int

    @classmethod
    def all_of(cls, secret: str) -> Iterator[_Anchor]:
        """The anchors of `secret`: every run of WINDOW past its public prefix holds one."""
        floor = _public(secret)
        first = max(0, floor - WINDOW + 1)  # where the first run that counts may start
        for position in range(first, len(secret) - ANCHOR + 1, STRIDE):
            yield cls(secret[position : position + ANCHOR], secret, position, floor)

    def runs(self, text: str) -> Iterator[tuple[int, int]]:
        """(start, end) of each run of `text` around this anchor that is long enough an echo."""
        secret, size = self.secret, len(text)
        found = text.find(self.text)
        while found != -1:
            start, first = found, self.position
            while start and first and text[start - 1] == secret[first - 1]:
                start, first = start - 1, first - 1
            end, last = found + ANCHOR, self.position + ANCHOR
            while end < size and last < len(secret) and text[end] == secret[last]:
                end, last = end + 1, last + 1
            if end - start >= WINDOW and last > self.floor:
                yield start, end
            found = text.find(self.text, found + 1)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`spans` in order, overlapping ones made one (touching ones stay apart: two masks)."""
    spans.sort()
    out = [spans[0]]
    for start, end in spans[1:]:
        last_start, last_end = out[-1]
        if start < last_end:
            out[-1] = (last_start, max(end, last_end))
        else:
            out.append((start, end))
    return out


def masked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each of `spans` (in order, apart) replaced by MASK."""
    out: list[str] = []
    start = 0
    for found, end in spans:
        out += (text[start:found], MASK)
        start = end
    out.append(text[start:])
    return "".join(out)


#: Per attrs class: (attribute, init name) of the fields that may hold text.
_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {}
_NOT_TEXT = frozenset({"int", "float", "bool", "int | None", "float | None", "bool | None"})


def _type_name(annotation: object) -> str:
    """A field's type as written (attrs keeps a string, or the class once types are resolved)."""
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def _text_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """The fields of an attrs class worth a look (not numbers or flags); () for other classes."""
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = ()
        if attrs.has(cls):
            fields = tuple(
                (field.name, field.alias or field.name)
                for field in attrs.fields(cls)
                if field.init and _type_name(field.type) not in _NOT_TEXT
            )
        _FIELDS[cls] = fields
    return fields


@attrs.frozen(repr=False, eq=False)
class Redactor(Value):
    """Replaces the secrets it was given, and every echo of one, with `***` (module docstring)."""

    secrets: tuple[str, ...] = ()
    _anchors: tuple[_Anchor, ...] = attrs.field(init=False, repr=False, eq=False)
    #: The anchors' texts, once each: what `holds_echo` looks for.
    _needles: tuple[str, ...] = attrs.field(init=False, repr=False, eq=False)

    @_anchors.default
    def _all_anchors(self) -> tuple[_Anchor, ...]:
        """Every secret's anchors."""
        return tuple(anchor for secret in self.secrets for anchor in _Anchor.all_of(secret))

    @_needles.default
    def _anchor_texts(self) -> tuple[str, ...]:
        """The anchors' texts without repeats, in order."""
        return tuple(dict.fromkeys(anchor.text for anchor in self._anchors))

    @classmethod
    def of(cls, secrets: Iterable[str | None]) -> Redactor:
        """A redactor for the secrets given (stripped; placeholders too short for keys skipped)."""
        found = {s.strip() for s in secrets if s and len(s.strip()) >= MIN_SECRET}
        return cls(tuple(sorted(found, key=len, reverse=True)))

    def __or__(self, other: Redactor) -> Redactor:
        """A redactor for the secrets of both."""
        if not other.secrets or other.secrets == self.secrets:
            return self
        return Redactor.of((*self.secrets, *other.secrets))

    def holds_echo(self, text: str) -> bool:
        """Whether `text` may hold a secret or an echo of one (False: it needs no masking)."""
        if len(text) < WINDOW:
            return False
        for needle in self._needles:  # noqa: SIM110 - per streamed piece: a loop beats any()
            if needle in text:
                return True
        return False

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where `text` gets a mask, as (start, end) runs in order and apart ([]: nowhere)."""
        if not self.holds_echo(text):
            return []
        found = [
            span for anchor in self._anchors if anchor.text in text for span in anchor.runs(text)
        ]
        return _merged(found) if found else []

    def tail(self, text: str) -> int:
        """Where the longest end of `text` that is a piece of a secret starts (len: none).

        What comes next may continue that piece into an echo, so a stream holds it back.
        """
        size, longest = len(text), 0
        for secret in self.secrets:
            length = longest + 1
            while length <= size and text[size - length :] in secret:
                length += 1
            longest = length - 1
        return size - longest

    def text(self, text: str) -> str:
        """`text` with every secret, and every echo of one, masked."""
        spans = self.spans(text)
        return masked(text, spans) if spans else text

    def event(self, event: T) -> T:
        """`event` with its text masked; the same object when nothing needed masking."""
        if not self._needles:
            return event
        redacted: T = self._value(event)
        return redacted

    def _value(self, value: Any) -> Any:
        """A str, tuple or attrs record with its text masked (the same object if untouched)."""
        kind = type(value)
        if kind is str:
            return self.text(value) if self.holds_echo(value) else value
        if kind is tuple:
            items = tuple(self._value(item) for item in value)
            changed = any(new is not old for new, old in zip(items, value, strict=True))
            return items if changed else value
        changes: dict[str, Any] | None = None
        for name, alias in _text_fields(kind):
            old = getattr(value, name)
            if old is None or (type(old) is str and not self.holds_echo(old)):
                continue
            new = self._value(old)
            if new is not old:
                changes = changes or {}
                changes[alias] = new
        return attrs.evolve(value, **changes) if changes else value

    def __repr__(self) -> str:
        """Never the secrets."""
        return f"Redactor({len(self.secrets)} secret(s))"


class RedactingFilter(logging.Filter):
    """Masks the known secrets in log records: the message, its arguments, the traceback."""

    def __init__(self, loggers: tuple[str, ...] = ()) -> None:
        """No secrets yet; `add` them as models and clients learn their keys.

        Once it knows one, it also filters the `loggers` named (other libraries'),
        which until then pay nothing for it.
        """
        super().__init__()
        self.redactor = Redactor()
        self.loggers = loggers

    def add(self, redactor: Redactor) -> None:
        """Mask `redactor`'s secrets too, from now on."""
        known = bool(self.redactor.secrets)
        self.redactor = self.redactor | redactor
        if self.redactor.secrets and not known:
            self._cover()

    def _cover(self) -> None:
        """Filter the named loggers and those already made beneath them (filters do not inherit)."""
        roots = tuple(f"{name}." for name in self.loggers)
        made = [name for name in logging.root.manager.loggerDict if name.startswith(roots)]
        for name in (*self.loggers, *made):
            found = logging.getLogger(name)
            if self not in found.filters:
                found.addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record with its text masked; never drops one."""
        redactor = self.redactor
        if not redactor.secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken format: logging reports it later, as usual
            return True
        record.msg, record.args = redactor.text(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redactor.text(record.exc_text)
        if record.stack_info:
            record.stack_info = redactor.text(record.stack_info)
        return True


#: The one filter on the "toolreel" loggers (every one `logger()` hands out), and on
#: `HTTP_LOGGERS` once a key is known.
LOG_FILTER = RedactingFilter(HTTP_LOGGERS)


def logger(name: str) -> logging.Logger:
    """A logger under "toolreel" carrying the redacting filter (filters do not inherit)."""
    found = logging.getLogger(name)
    if LOG_FILTER not in found.filters:
        found.addFilter(LOG_FILTER)
    return found


# A library's loggers print nothing unless the application configures logging.
logger("toolreel").addHandler(logging.NullHandler())
