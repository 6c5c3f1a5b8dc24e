"""The one converter between core records and JSON-ready data (journals, snapshots, replay).

Events, effects, notices, outcomes, hook decisions and output specs are tagged unions:
each value carries a `"type"` key naming its class, so a journal line reads on its own.
Image bytes are base64 text; an empty `images` is left out (`_configure_images`), and so
are the fields a chat never sets (`_configure_defaults`): a `LoopConfig`'s text `output`,
a `Finish`'s `attempts`. Left out, what older journals wrote reads and replays unchanged.
The converter is built on first use, not at import: configuring the unions
costs tens of milliseconds that a program which never journals to disk or
replays should not pay to start (`converter` is looked up lazily, PEP 562).
"""

from __future__ import annotations

import base64
import functools
import json
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, get_args, get_origin

from toolreel.core import (
    CallModel,
    ChatMessage,
    Effect,
    Event,
    Finish,
    ImagePart,
    LoopConfig,
    ModelCallFailed,
    ModelRequest,
    OutputSpec,
    PromptSubmitted,
    Reasoning,
    ReasoningDelta,
    State,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolResult,
    Usage,
)
from toolreel.core.budget import Price
from toolreel.core.compaction import Compaction, KeepTokens, KeepTurns
from toolreel.core.hooks import Decision
from toolreel.core.notices import Notice
from toolreel.core.outcomes import Outcome

if TYPE_CHECKING:
    import cattrs

from ._agent_outcome import AgentOutcome
from ._errors import DecodeError

T = TypeVar("T")


def _is_set(kind: Any) -> bool:
    """Whether `kind` is a set type (held as a sorted list in JSON)."""
    return kind in (set, frozenset) or get_origin(kind) in (set, frozenset)


def _make_converter() -> cattrs.Converter:
    """A converter that knows toolreel's unions; sets become sorted lists."""
    import cattrs  # noqa: PLC0415 - loaded when the converter is built, not with toolreel
    from cattrs.strategies import configure_tagged_union  # noqa: PLC0415 - only when built

    conv = cattrs.Converter(forbid_extra_keys=True)
    # before any hook is built: the hooks made as unions are configured use it
    conv.register_unstructure_hook_factory(_is_pair, functools.partial(_pair_hook, conv))
    conv.register_unstructure_hook_func(
        _is_set, lambda value: sorted(conv.unstructure(item) for item in value)
    )
    _configure_provenance(conv)
    _configure_images(conv)
    _configure_cache_counters(conv)
    _configure_stream(conv)
    for union in (Outcome, OutputSpec, KeepTurns | KeepTokens, Compaction):  # before their holders
        configure_tagged_union(union, conv, tag_name="type")
    _configure_optional(conv, Compaction)
    _configure_defaults(conv)
    for union in (Decision, Notice, Event, Effect, AgentOutcome):
        configure_tagged_union(union, conv, tag_name="type")
    return conv


def _is_pair(kind: Any) -> bool:
    """Whether `kind` is a fixed-length tuple type (`tuple[str, int]`: a pair, say)."""
    args = get_args(kind)
    return get_origin(kind) is tuple and bool(args) and args[-1] is not Ellipsis


def _pair_hook(conv: cattrs.Converter, kind: Any) -> Callable[[Any], list[Any]]:
    """A fixed-length tuple as a JSON list, as it reads back from the journal.

    cattrs keeps such a tuple a tuple; recorded and read back it is a list, so
    the `tool_calls` of a `UsageReported` (pairs of name and count) replayed
    would differ from the record by type alone (issue 20, item 4).
    """
    hooks = [conv.get_unstructure_hook(arg) for arg in get_args(kind)]
    return lambda value: [hook(item) for hook, item in zip(hooks, value, strict=True)]


def _configure_images(conv: cattrs.Converter) -> None:
    """Image bytes as base64 text; `images` and an image's unused source left out when empty.

    Left out, a text-only record writes exactly what it wrote before images
    existed, so older journals replay unchanged and text-only ones do not grow.
    """
    from cattrs.gen import make_dict_unstructure_fn, override  # noqa: PLC0415 - when built

    conv.register_unstructure_hook(bytes, lambda data: base64.b64encode(data).decode("ascii"))
    conv.register_structure_hook(bytes, _bytes_of)
    omit = override(omit_if_default=True)
    image = make_dict_unstructure_fn(ImagePart, conv, data=omit, url=omit)
    conv.register_unstructure_hook(ImagePart, image)  # before the records that hold images
    for kind in (ChatMessage, PromptSubmitted, ToolFinished):
        conv.register_unstructure_hook(kind, make_dict_unstructure_fn(kind, conv, images=omit))
    result = make_dict_unstructure_fn(ToolResult, conv, images=omit, reason=omit)
    conv.register_unstructure_hook(ToolResult, result)  # a tool's own output: no reason


def _configure_cache_counters(conv: cattrs.Converter) -> None:
    """A `Usage`'s, a `Price`'s and a `ModelRequest`'s cache fields left out when unset.

    Registered before any record holding them, so a call that cached nothing, a price
    with no cache rates and a request with no cache key write what they wrote before
    caching existed: older journals read and replay unchanged.
    """
    from cattrs.gen import make_dict_unstructure_fn, override  # noqa: PLC0415 - when built

    omit = override(omit_if_default=True)
    usage = make_dict_unstructure_fn(Usage, conv, cache_read_tokens=omit, cache_write_tokens=omit)
    conv.register_unstructure_hook(Usage, usage)
    price = make_dict_unstructure_fn(
        Price, conv, cache_read_per_million=omit, cache_write_per_million=omit
    )
    conv.register_unstructure_hook(Price, price)
    request = make_dict_unstructure_fn(ModelRequest, conv, cache_key=omit)
    conv.register_unstructure_hook(ModelRequest, request)


def _configure_provenance(conv: cattrs.Converter) -> None:
    """A reasoning block's (and delta's) `provider` left out when unset: older journals, and
    sessions of one model, write what they wrote before.

    Registered before any record holding them.
    """
    from cattrs.gen import make_dict_unstructure_fn, override  # noqa: PLC0415 - when built

    omit = override(omit_if_default=True)
    for kind in (Reasoning, ReasoningDelta):
        conv.register_unstructure_hook(kind, make_dict_unstructure_fn(kind, conv, provider=omit))


def _configure_optional(conv: cattrs.Converter, union: Any) -> None:
    """`union | None` as the tagged `union`, or None (cattrs tags the union alone)."""
    conv.register_unstructure_hook(
        union | None, lambda value: None if value is None else conv.unstructure(value, union)
    )
    conv.register_structure_hook(
        union | None, lambda data, _: None if data is None else conv.structure(data, union)
    )


def _configure_defaults(conv: cattrs.Converter) -> None:
    """A config's text `output`, no `cache_key`, `fallback` or `compaction`, a `Finish`'s
    `attempts`, a failure's `context_too_long` and a call's `summary` and `model` (the
    config's own, 0) left out when a chat has them: journals of one model and no policy
    write what they wrote before."""
    from cattrs.gen import make_dict_unstructure_fn, override  # noqa: PLC0415 - when built

    omit = override(omit_if_default=True)
    config = make_dict_unstructure_fn(
        LoopConfig, conv, output=omit, cache_key=omit, fallback=omit, compaction=omit
    )
    conv.register_unstructure_hook(LoopConfig, config)
    conv.register_unstructure_hook(Finish, make_dict_unstructure_fn(Finish, conv, attempts=omit))
    failed = make_dict_unstructure_fn(ModelCallFailed, conv, context_too_long=omit)
    conv.register_unstructure_hook(ModelCallFailed, failed)
    call = make_dict_unstructure_fn(CallModel, conv, model=omit, summary=omit)
    conv.register_unstructure_hook(CallModel, call)


def _configure_stream(conv: cattrs.Converter) -> None:
    """A state's partial response as its text (the core keeps it in pieces: one string here).

    Found through `State`'s annotations, not imported: the class is the core's own.
    """
    stream = typing.get_type_hints(State)["stream"]
    unstructured = conv.get_unstructure_hook(stream)  # the fields, the text's replaced below
    structured = conv.get_structure_hook(stream)

    def unstructure_stream(value: Any) -> dict[str, Any]:
        data: dict[str, Any] = unstructured(value)
        del data["earlier"], data["tail"]
        return {"text": value.text, **data}

    def structure_stream(data: dict[str, Any], kind: type) -> Any:
        fields = dict(data)
        text = fields.pop("text", "")
        return structured({**fields, "earlier": None, "tail": text}, kind)

    conv.register_unstructure_hook(stream, unstructure_stream)
    conv.register_structure_hook(stream, structure_stream)


def _bytes_of(text: Any, _: type) -> bytes:
    """Image bytes back from the base64 text the journal holds."""
    if not isinstance(text, str):
        raise TypeError(f"expected base64 text, got {type(text).__name__}")
    return base64.b64decode(text.encode("ascii"), validate=True)


@functools.cache
def get_converter() -> cattrs.Converter:
    """The converter, built the first time it is needed."""
    return _make_converter()


def __getattr__(name: str) -> cattrs.Converter:
    """`converter`: the shared converter, built on first use."""
    if name == "converter":
        return get_converter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def unstructure(value: Any) -> Any:
    """A core value (record, event, effect, or a tuple of them) as JSON-ready data."""
    return get_converter().unstructure(value)


def structure(data: Any, kind: type[T]) -> T:
    """JSON-ready data back into a core value of `kind` (a class or union)."""
    result: T = get_converter().structure(data, kind)
    return result


class _Hooks(dict[type, Callable[..., Any]]):
    """Per-class hooks, each looked up from the converter the first time its class is met."""

    def __init__(self, lookup: Callable[[cattrs.Converter, type], Callable[..., Any]]) -> None:
        """Fill lazily with `lookup(converter, kind)`."""
        super().__init__()
        self._lookup = lookup

    def __missing__(self, kind: type) -> Callable[..., Any]:
        """Look the hook up once; later lookups are plain dict hits."""
        hook = self[kind] = self._lookup(get_converter(), kind)
        return hook


# Per-class hooks looked up once: journals encode and replay decodes every step,
# and the tagged-union dispatch costs more than the generated per-class functions.
#: Every event a journal holds.
_EVENT_TYPES: dict[str, type] = {kind.__name__: kind for kind in get_args(Event)}
_STRUCTURE = _Hooks(lambda converter, kind: converter.get_structure_hook(kind))
_UNSTRUCTURE = _Hooks(lambda converter, kind: converter.get_unstructure_hook(kind))
_FLAT_EVENTS = frozenset({TextDelta, ToolCallArgumentsDelta, ToolCallStarted, ToolFinished})


def event_data(event: Event) -> dict[str, Any]:
    """An event as tagged JSON data."""
    data: dict[str, Any] = get_converter().unstructure(event, Event)
    return data


def event_of(data: dict[str, Any]) -> Event:
    """An event back from tagged JSON data (older journals' names read as today's events)."""
    fields = dict(data)
    tag = fields.pop("type")
    if tag == "ToolResultAdded":  # older journals: the caller's result had its own event
        fields["output"] = fields.pop("content")
        tag = "ToolFinished"
    kind = _EVENT_TYPES[tag]
    if kind in _FLAT_EVENTS and "images" not in fields:  # str/int/bool fields only: deltas
        return kind(**fields)  # type: ignore[no-any-return]
    event: Event = _STRUCTURE[kind](fields, kind)
    return event


def effect_data(effect: Effect) -> dict[str, Any]:
    """An effect as tagged JSON data."""
    kind = type(effect)
    data: dict[str, Any] = _UNSTRUCTURE[kind](effect)
    data["type"] = kind.__name__
    return data


def event_to_json(event: Event) -> str:
    """One event as compact JSON text."""
    return json.dumps(event_data(event), separators=(",", ":"))


def event_from_json(text: str) -> Event:
    """One event from the JSON text `event_to_json` made (`DecodeError` if it is not one)."""
    try:
        return event_of(json.loads(text))
    except Exception as exc:  # json, cattrs and KeyError all mean "not an event"
        detail = f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise DecodeError(f"not an event's JSON: {detail}") from exc
