"""The converter round-trips every member of every union through JSON, as a journal does.

A replay compares the effects the reducer makes now, as records, with the
records the journal read back from JSON; an event is read back from JSON and
fed again. So for every value `x` of every union member, generated from its
type annotations:

- its data is JSON-stable: `loads(dumps(data)) == data` (a tuple where JSON has
  a list made budgeted sessions diverge: issue 20, item 4);
- its effect record (what a journal stores) is JSON-stable too;
- the data structures back to `x`.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin, get_type_hints

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from toolreel.adapters import effect_record, structure
from toolreel.adapters._agent_outcome import AgentOutcome
from toolreel.adapters.records import event_data, event_of, get_converter
from toolreel.core import (
    Effect,
    Event,
    ImagePart,
    OutputSpec,
    ToolreelError,
    ToolSpec,
    ValidationFinished,
)
from toolreel.core.hooks import Decision
from toolreel.core.images import MEDIA_TYPES
from toolreel.core.notices import Notice
from toolreel.core.outcomes import Outcome

UNIONS: dict[str, Any] = {
    "Decision": Decision,
    "Notice": Notice,
    "Outcome": Outcome,
    "Event": Event,
    "Effect": Effect,
    "OutputSpec": OutputSpec,
    "AgentOutcome": AgentOutcome,
}
MEMBERS = sorted(
    {(name, member) for name, union in UNIONS.items() for member in get_args(union)},
    key=lambda pair: (pair[0], pair[1].__name__),
)

texts = st.text(max_size=12)
#: JSON's numbers as a journal holds them (orjson: 64-bit integers, finite floats).
integers = st.integers(min_value=-(2**63), max_value=2**63 - 1)
floats = st.floats(allow_nan=False, allow_infinity=False)
images = st.one_of(
    st.builds(
        ImagePart,
        media_type=st.sampled_from(sorted(MEDIA_TYPES)),
        data=st.binary(min_size=1, max_size=8),
    ),
    st.builds(
        ImagePart,
        media_type=st.sampled_from(sorted(MEDIA_TYPES)),
        url=st.sampled_from(["https://example.com/a.png", "http://127.0.0.1/b.gif"]),
    ),
)
schemas = st.sampled_from(
    ['{"properties":{},"type":"object"}', '{"properties":{"a":{"type":"integer"}},"type":"object"}']
)
tool_specs = st.builds(
    ToolSpec, name=st.text(min_size=1, max_size=8), description=texts, parameters=schemas
)
#: Types whose validators a blind draw would rarely satisfy.
SPECIAL: dict[Any, st.SearchStrategy[Any]] = {ImagePart: images, ToolSpec: tool_specs}


def strategy(kind: Any) -> st.SearchStrategy[Any]:
    """Values of the annotated type `kind` (attrs classes field by field)."""
    if kind in SPECIAL:
        return SPECIAL[kind]
    origin, args = get_origin(kind), get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(strategy(arg) for arg in args))
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is tuple and args and args[-1] is Ellipsis:
        return st.lists(strategy(args[0]), max_size=3).map(tuple)
    if origin is tuple:
        return st.tuples(*(strategy(arg) for arg in args))
    if origin is frozenset:
        return st.frozensets(strategy(args[0]), max_size=3)
    if attrs.has(kind):
        return _record(kind)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return st.sampled_from(list(kind))
    return _SCALARS[kind]


_SCALARS: dict[Any, st.SearchStrategy[Any]] = {
    str: texts,
    int: integers,
    float: floats,
    bool: st.booleans(),
    bytes: st.binary(max_size=8),
    type(None): st.none(),
}


def _record(kind: type) -> st.SearchStrategy[Any]:
    """An attrs class built from drawn fields (values its validators refuse are passed over)."""
    hints = get_type_hints(kind)
    fields = {field.name: st.deferred(_lazy(hints[field.name])) for field in attrs.fields(kind)}

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        values = {name: draw(field) for name, field in fields.items()}
        try:
            return kind(**values)
        except (ToolreelError, ValueError, TypeError):
            assume(False)
            raise AssertionError("unreachable") from None

    return build()


def _lazy(kind: Any) -> Callable[[], st.SearchStrategy[Any]]:
    """The strategy of `kind`, made when first drawn (records nest)."""
    return lambda: strategy(kind)


def json_round_trip(data: Any) -> Any:
    """`data` written and read back as a journal does."""
    return orjson.loads(orjson.dumps(data))


@pytest.mark.parametrize(("union", "member"), MEMBERS, ids=lambda v: getattr(v, "__name__", v))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_member_round_trips_through_json(union: str, member: type, data: Any) -> None:
    value = data.draw(strategy(member))
    unstructured = get_converter().unstructure(value, UNIONS[union])
    assert json_round_trip(unstructured) == unstructured
    assert structure(json_round_trip(unstructured), UNIONS[union]) == value
    if union == "Effect":
        record = effect_record(value)
        assert json_round_trip(record) == record
    if union == "Event":
        event = event_data(value)
        assert json_round_trip(event) == event
        assert event_of(json_round_trip(event)) == value


@settings(max_examples=40, deadline=None)
@given(value=strategy(ValidationFinished))
def test_an_agent_runs_own_event_round_trips_through_json(value: ValidationFinished) -> None:
    event = event_data(value)
    assert json_round_trip(event) == event
    assert event_of(json_round_trip(event)) == value
