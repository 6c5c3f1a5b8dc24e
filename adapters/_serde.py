"""The one converter between core records and JSON-ready data (journals, snapshots, replay).

Events, effects, notices and hook decisions are tagged unions: each value
carries a `"type"` key naming its class, so a journal line reads on its own.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar, cast, get_origin

import cattrs
from cattrs.strategies import configure_tagged_union

from toolreel.core import Decision, Effect, Event, Notice

T = TypeVar("T")


def _is_set(kind: Any) -> bool:
    """Whether `kind` is a set type (held as a sorted list in JSON)."""
    return kind in (set, frozenset) or get_origin(kind) in (set, frozenset)


def _make_converter() -> cattrs.Converter:
    """A converter that knows toolreel's unions; sets become sorted lists."""
    conv = cattrs.Converter(forbid_extra_keys=True)
    for union in (Decision, Notice, Event, Effect):
        configure_tagged_union(union, conv, tag_name="type")
    conv.register_unstructure_hook_func(
        _is_set, lambda value: sorted(conv.unstructure(item) for item in value)
    )
    return conv


converter = _make_converter()


def unstructure(value: Any) -> Any:
    """A core value (record, event, effect, or a tuple of them) as JSON-ready data."""
    return converter.unstructure(value)


def structure(data: Any, kind: type[T]) -> T:
    """JSON-ready data back into a core value of `kind` (a class or union)."""
    result: T = converter.structure(data, kind)
    return result


def event_to_json(event: Event) -> str:
    """One event as compact JSON text."""
    return json.dumps(converter.unstructure(event, Event), separators=(",", ":"))


def event_from_json(text: str) -> Event:
    """One event from the JSON text `event_to_json` made."""
    return cast(Event, converter.structure(json.loads(text), Event))  # type: ignore[arg-type]
