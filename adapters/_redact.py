"""Redaction: the one step every text that leaves the process or is stored passes through.

A `Redactor` knows the configured secrets (API keys) and replaces each, and
its echoes, with `***`: the key itself and any piece of text that starts like
it for `PROBE` characters or more (servers echo cut keys, `sk-abc123def4***`).
It is applied where text crosses the boundary: events before they reach the
reducer (so the journal, exports, transcripts, notices and errors never hold a
key), log records (`LOG_FILTER`, on the "toolreel" logger), and the CLI's
messages. A key split across stream pieces is caught before that, by holding
back the tail of a piece that could still become one (adapters/_held.py, on
every model stream of a run whose keys are known). Keys are cleaned where
they enter (`clean_key`): surrounding whitespace goes, inner whitespace or
control characters are refused.

Cost: an event none of whose text holds a secret's first `PROBE` characters
is returned as it is (one substring test per text field and secret).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import attrs

from toolreel.core import ConfigError

__all__ = ["LOG_FILTER", "MASK", "RedactingFilter", "Redactor", "clean_key", "logger"]

MASK = "***"
#: An echo of a key at least this long (a prefix of it) is masked.
PROBE = 12
#: Shorter "keys" are placeholders for local servers ("ollama", "none"), not secrets.
MIN_SECRET = 8

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


def _spans(text: str, secret: str, probe: str) -> Iterator[tuple[int, int]]:
    """Each run of `text` that starts with `probe` and follows `secret`, as (start, end)."""
    start = 0
    while (found := text.find(probe, start)) != -1:
        end = found + len(probe)
        while end - found < len(secret) and end < len(text) and text[end] == secret[end - found]:
            end += 1
        yield found, end
        start = end


def _mask(text: str, secret: str, probe: str) -> str:
    """`text` with every run that starts with `probe` and follows `secret` replaced by MASK."""
    out: list[str] = []
    start = 0
    for found, end in _spans(text, secret, probe):
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


@attrs.frozen
class Redactor:
    """Replaces the secrets it was given (longest first), and their echoes, with `***`."""

    secrets: tuple[str, ...] = ()
    _probes: tuple[tuple[str, str], ...] = attrs.field(init=False, repr=False, eq=False)

    @_probes.default
    def _probe_pairs(self) -> tuple[tuple[str, str], ...]:
        """Each secret with the prefix whose presence means an echo."""
        return tuple((secret, secret[:PROBE]) for secret in self.secrets)

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

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where `text` would get a mask, as (start, end) runs (in no particular order)."""
        return [
            span
            for secret, probe in self._probes
            if probe in text
            for span in _spans(text, secret, probe)
        ]

    def text(self, text: str) -> str:
        """`text` with every secret, and every echo of one, masked."""
        for secret, probe in self._probes:
            if probe in text:
                text = _mask(text, secret, probe)
        return text

    def event(self, event: T) -> T:
        """`event` with its text masked; the same object when nothing needed masking."""
        if not self._probes:
            return event
        redacted: T = self._value(event)
        return redacted

    def _value(self, value: Any) -> Any:
        """A str, tuple or attrs record with its text masked (the same object if untouched)."""
        kind = type(value)
        if kind is str:
            for _, probe in self._probes:
                if probe in value:
                    return self.text(value)
            return value
        if kind is tuple:
            items = tuple(self._value(item) for item in value)
            changed = any(new is not old for new, old in zip(items, value, strict=True))
            return items if changed else value
        changes: dict[str, Any] | None = None
        for name, alias in _text_fields(kind):
            old = getattr(value, name)
            if old is None:
                continue
            if type(old) is str:  # the common case, inline
                for _, probe in self._probes:
                    if probe in old:
                        break
                else:
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

    def __init__(self) -> None:
        """No secrets yet; `add` them as models and clients learn their keys."""
        super().__init__()
        self.redactor = Redactor()

    def add(self, redactor: Redactor) -> None:
        """Mask `redactor`'s secrets too, from now on."""
        self.redactor = self.redactor | redactor

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


#: The one filter on the "toolreel" logger (and on every logger `logger()` hands out).
LOG_FILTER = RedactingFilter()


def logger(name: str) -> logging.Logger:
    """A logger under "toolreel" carrying the redacting filter (filters do not inherit)."""
    found = logging.getLogger(name)
    if LOG_FILTER not in found.filters:
        found.addFilter(LOG_FILTER)
    return found


# A library's loggers print nothing unless the application configures logging.
logger("toolreel").addHandler(logging.NullHandler())
