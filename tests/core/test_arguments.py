"""Invalid arguments are told in a fixed vocabulary, the same on every interpreter."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolreel.core._arguments import MAX_DEPTH, arguments_error, arguments_object, syntax_problem

PROBLEM = "arguments are not valid JSON: "


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"a": ', "Expecting value at char 6"),
        ('{"a" 1}', "Expecting ':' at char 5"),
        ("{1: 2}", "Expecting property name at char 1"),
        ('{"a": 1,}', "Expecting property name at char 8"),
        ('{"a": 1 "b": 2}', "Expecting ',' or '}' at char 8"),
        ('{"a": [1 2]}', "Expecting ',' or ']' at char 9"),
        ('{"a": "b', "Unterminated string starting at char 6"),
        ('{"a": "\\x"}', "Invalid escape at char 7"),
        ('{"a": "\\u12"}', "Invalid escape at char 7"),
        ('{"a": "b\nc"}', "Invalid control character at char 8"),
        ('{"a": 1} x', "Extra data at char 9"),
        ("{} {}", "Extra data at char 3"),
        ('{"a": 01}', "Expecting ',' or '}' at char 7"),
        ("", "Expecting value at char 0"),
        ("[]", "expected an object, got list"),
        ('"text"', "expected an object, got str"),
    ],
)
def test_each_problem_is_told_in_the_fixed_vocabulary_with_its_position(
    arguments: str, problem: str
) -> None:
    assert arguments_error(arguments) == PROBLEM + problem


def test_nesting_is_bounded_explicitly_and_deeper_arguments_are_refused() -> None:
    deep = '{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    deepest = '{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"
    assert arguments_error(deepest) is None
    assert arguments_error(deep) == f"{PROBLEM}Nesting deeper than {MAX_DEPTH} levels at char 105"
    assert arguments_error("[" * 100_000).startswith(PROBLEM + "Nesting deeper than")


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    assert arguments_error(json.dumps({"a": "[" * 500})) is None


@contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    """Run with a lower recursion limit (as a deep host application might)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def frames() -> int:
    """How deep the stack is here."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


def test_the_verdict_does_not_depend_on_the_interpreters_recursion_limit() -> None:
    nested = '{"a": ' + "[" * 90 + "]" * 90 + "}"
    relaxed = arguments_error(nested)
    with recursion_limit(frames() + 60):
        strict = arguments_error(nested)
    assert strict == relaxed is None


JSONISH = st.text(alphabet='{}[]":,.-+eE0123456789 \\ntrufalsebx', max_size=30)


@given(JSONISH)
def test_the_scanner_accepts_exactly_what_the_json_parser_accepts(text: str) -> None:
    try:
        json.loads(text)
        valid = True
    except ValueError:
        valid = False
    assert (syntax_problem(text) is None) == valid


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), st.lists, max_leaves=8))
def test_any_json_document_passes_the_scanner(value: object) -> None:
    assert syntax_problem(json.dumps(value)) is None


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("{}", {}),
        ("[1]", None),
        ("null", None),
        ('{"a": ', None),
        ("[" * (MAX_DEPTH + 1), None),
        ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", None),
    ],
)
def test_arguments_object_is_the_dict_or_none(arguments: str, expected: object) -> None:
    """The one reading of a call's arguments as a dict: None for anything but an object."""
    assert arguments_object(arguments) == expected
