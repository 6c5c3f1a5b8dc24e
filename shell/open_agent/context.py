"""open_agent's context helpers: estimate a history's size, keep only its recent messages.

Opt-in and explicit, as in open_agent: nothing here runs by itself; the application
decides when a history is too long and what to drop.

    tokens = estimate_tokens(client.history)
    if tokens > 28_000:
        client.message_history = truncate_messages(client.history, keep=10)

`estimate_tokens` counts with tiktoken when it is installed and its encoding loads
(`pip install tiktoken`; the encoding files are downloaded once, so offline it may not
load), otherwise about four characters a token. Either way each message adds the few
tokens of framing that chat formats spend on it. An estimate, not the server's count:
each model family has its own tokenizer.
"""

from __future__ import annotations

import functools
import importlib
import math
import numbers
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, cast

from toolreel.core import ConfigError

__all__ = ["estimate_tokens", "truncate_messages"]

#: Tokens a chat format spends framing each message (role, separators), and priming the reply.
_PER_MESSAGE = 3
_REPLY_PRIMING = 3
#: Characters per token when no tokenizer is at hand (English text averages about four).
_CHARS_PER_TOKEN = 4
#: The encoding tiktoken uses for models it does not know (GPT-3.5/4's).
_DEFAULT_ENCODING = "cl100k_base"


class _Encoding(Protocol):
    """What is used of a tiktoken encoding."""

    def encode(self, text: str, *, disallowed_special: Any = ...) -> list[int]:
        """The token ids of `text`."""
        ...


def estimate_tokens(messages: Sequence[Mapping[str, Any]], model: str = "gpt-3.5-turbo") -> int:
    """About how many tokens `messages` take in a request, so callers can trim in time."""
    if not messages:
        return 0
    texts = [text for message in messages for text in _texts(message)]
    framing = _PER_MESSAGE * len(messages) + _REPLY_PRIMING
    encoding = _encoding_for(model)
    if encoding is None:
        chars = sum(len(text) for text in texts)
        return math.ceil(chars / _CHARS_PER_TOKEN) + framing
    return sum(len(encoding.encode(text, disallowed_special=())) for text in texts) + framing


def truncate_messages(
    messages: Sequence[Mapping[str, Any]], keep: int = 10, preserve_system: bool = True
) -> list[Any]:
    """A new list: the leading system message (if kept) and the `keep` most recent others."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise ConfigError("keep", keep, "a whole number of messages >= 0")
    head: list[Any] = []
    rest = list(messages)
    if preserve_system and rest and rest[0].get("role") == "system":
        head, rest = rest[:1], rest[1:]
    return head + (rest[-keep:] if keep else [])


def _texts(value: Any) -> Iterator[str]:
    """Every piece of text a message holds: strings and numbers, at any depth, not the keys."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, numbers.Number):
        yield str(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, Sequence | set | frozenset) and not isinstance(value, bytes):
        for item in value:
            yield from _texts(item)
    else:
        yield str(value)


def _encoding_for(model: str) -> _Encoding | None:
    """tiktoken's encoding for `model`, or None without tiktoken or when it cannot load."""
    try:
        tiktoken = importlib.import_module("tiktoken")
    except ImportError:
        return None
    return _load_encoding(tiktoken, model)


@functools.lru_cache(maxsize=32)
def _load_encoding(tiktoken: Any, model: str) -> _Encoding | None:
    """The encoding, loaded once per model (a failed load, e.g. offline, is not retried)."""
    try:
        try:
            return cast(_Encoding, tiktoken.encoding_for_model(model))
        except KeyError:
            return cast(_Encoding, tiktoken.get_encoding(_DEFAULT_ENCODING))
    except Exception:  # tiktoken fetches encodings over the network: any failure -> fallback
        return None
