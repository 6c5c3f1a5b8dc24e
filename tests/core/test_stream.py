"""A streamed response (core/_response.py) and its arguments (core/_arguments.py)."""

from __future__ import annotations

import pytest

from toolreel.core import Reasoning
from toolreel.core._arguments import arguments_error
from toolreel.core._response import Stream, add_fragment, add_reasoning, finished_calls, start_call


def test_fragments_before_a_start_are_kept_and_the_start_fills_in_id_and_name() -> None:
    stream = add_fragment(Stream(), 0, '{"a": 1}')
    stream = start_call(stream, 0, "c1", "add", None)
    [call] = finished_calls(stream, 1, 1)
    assert (call.id, call.name, call.arguments) == ("c1", "add", '{"a": 1}')


def test_calls_come_out_in_index_order_whatever_order_they_started() -> None:
    stream = start_call(Stream(), 1, "second", "add", None)
    stream = start_call(stream, 0, "first", "add", None)
    assert [c.id for c in finished_calls(stream, 1, 1)] == ["first", "second"]


def test_signature_closes_a_reasoning_block_and_text_after_it_opens_another() -> None:
    stream = add_reasoning(Stream(), "a", None, None)
    stream = add_reasoning(stream, "b", "sig", None)
    stream = add_reasoning(stream, "c", None, None)
    assert stream.reasoning == (Reasoning(text="ab", signature="sig"), Reasoning(text="c"))


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"a": 1}', None),
        ("{}", None),
        ('{"a": ', "arguments are not valid JSON: Expecting value"),
        ("[]", "arguments are not valid JSON: expected an object, got list"),
        ("null", "arguments are not valid JSON: expected an object, got NoneType"),
    ],
)
def test_arguments_must_be_a_json_object(arguments: str, problem: str | None) -> None:
    error = arguments_error(arguments)
    assert error == problem if problem is None else error.startswith(problem)


def test_deeply_nested_arguments_are_an_error_not_a_crash() -> None:
    error = arguments_error("[" * 100_000)
    assert error is not None and error.startswith("arguments are not valid JSON")
