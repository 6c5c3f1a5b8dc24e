"""Records (core/_records.py): usage sums, JSON held as text, immutability."""

from __future__ import annotations

import attrs
import pytest

from toolreel.core import ChatMessage, ToolSpec, Usage


def test_usage_adds_counter_by_counter_including_extra_counters() -> None:
    a = Usage(input_tokens=1, output_tokens=2, extra=(("cached", 3), ("reasoning", 1)))
    b = Usage(input_tokens=10, output_tokens=20, extra=(("audio", 5), ("cached", 4)))
    assert a + b == Usage(
        input_tokens=11, output_tokens=22, extra=(("audio", 5), ("cached", 7), ("reasoning", 1))
    )
    assert (a + b).total_tokens == 33


def test_tool_spec_holds_its_schema_as_canonical_json_text() -> None:
    spec = ToolSpec(name="add", parameters={"type": "object", "properties": {}})
    assert spec.parameters == '{"properties":{},"type":"object"}'
    assert spec == ToolSpec(name="add", parameters='{"properties":{},"type":"object"}')
    assert hash(spec) == hash(ToolSpec(name="add", parameters=spec.parameters))


def test_records_are_frozen() -> None:
    message = ChatMessage(role="user", content="hi")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        message.content = "changed"  # type: ignore[misc]
