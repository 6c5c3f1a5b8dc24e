"""The provider registry: each provider's name and its codec class, imported at first look-up.

`import toolreel.adapters` should not pay for five codecs when a program talks to one
provider: an entry may name its class as "module:Class" (relative to this package),
which is imported the first time the entry is read, then kept. Otherwise it behaves
as the dict it replaces: names can be added, replaced or removed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING

from .._lazy import imported

if TYPE_CHECKING:
    from ._codec import Codec


class CodecRegistry(MutableMapping[str, "type[Codec]"]):
    """Provider names and their codec classes; a class named as "module:Class" loads when read."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[str, type[Codec] | str]) -> None:
        """Hold `entries`: a codec class, or where to import it from."""
        self._entries: dict[str, type[Codec] | str] = dict(entries)

    def __getitem__(self, name: str) -> type[Codec]:
        """The codec class of a provider, imported if this is its first look-up."""
        entry = self._entries[name]
        if isinstance(entry, str):
            loaded: type[Codec] = imported(__package__, entry)
            self._entries[name] = entry = loaded
        return entry

    def __setitem__(self, name: str, codec: type[Codec]) -> None:
        """Register (or replace) a provider's codec class."""
        self._entries[name] = codec

    def __delitem__(self, name: str) -> None:
        """Forget a provider."""
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        """The provider names, without importing any codec."""
        return iter(self._entries)

    def __len__(self) -> int:
        """How many providers are known."""
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        """Whether a provider is known, without importing its codec."""
        return name in self._entries

    def __repr__(self) -> str:
        """As the dict of every codec class (importing them all)."""
        return repr(dict(self.items()))
