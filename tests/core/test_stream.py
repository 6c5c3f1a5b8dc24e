"""A streamed response (core/_response.py) and its arguments (core/_arguments.py)."""

from __future__ import annotations

import pytest

from toolreel.core import Reasoning
from toolreel.core._arguments import arguments_error
from toolreel.core._response import (
    Stream,
    add_fragment,
    add_reasoning,
    add_text,
    finished_calls,
    start_call,
)


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


# --- found missing by mutation testing (make mutate, core/_response.py) --------------------

LONG = "x" * 5000  # past PIECE: the text is held as earlier pieces plus a tail


def test_a_long_answer_stays_whole_through_reasoning_and_calls() -> None:
    stream = add_text(Stream(), LONG)
    stream = add_text(stream, LONG)  # the first tail became a piece
    stream = add_reasoning(stream, "hm", None, None)
    stream = add_reasoning(stream, "", None, "opaque")  # a redacted block
    stream = add_reasoning(stream, "ok", "sig", None)
    stream = start_call(stream, 0, "c0", "add", None)
    stream = add_fragment(stream, 0, '{"a"')
    stream = start_call(stream, 1, "c1", "add", None)
    stream = add_fragment(stream, 0, ": 1}")  # back to the earlier call
    stream = add_fragment(stream, 1, "{}")
    stream = add_fragment(stream, 2, "{}")  # a call that never started
    assert stream.text == LONG + LONG
    assert [c.arguments for c in finished_calls(stream, 1, 1)] == ['{"a": 1}', "{}", "{}"]


def test_a_tail_of_exactly_a_piece_is_kept_in_order() -> None:
    stream = add_text(Stream(), "a" * 2047)
    stream = add_text(stream, "b")  # now 2,048: a full piece
    stream = add_text(stream, "c")
    assert stream.text == "a" * 2047 + "bc"
    assert (len(stream.tail), stream.earlier is not None) == (1, True)


def test_each_reasoning_block_keeps_the_provider_that_sent_it() -> None:
    stream = add_reasoning(Stream(), "", None, "opaque", provider="anthropic")
    stream = add_reasoning(stream, "all at once", "sig", None, provider="gemini")
    assert stream.reasoning == (
        Reasoning(redacted="opaque", provider="anthropic"),
        Reasoning(text="all at once", signature="sig", provider="gemini"),
    )
    assert stream.reasoning_open is False


def test_a_calls_signature_survives_its_later_fragments() -> None:
    stream = start_call(Stream(), 0, "c0", "add", "thought-sig")
    stream = start_call(stream, 1, "c1", "add", None)
    stream = add_fragment(stream, 0, "{}")  # not the call streaming now
    stream = add_fragment(stream, 1, "{}")
    assert [c.signature for c in finished_calls(stream, 1, 1)] == ["thought-sig", None]
