"""A tool's docstring as the model reads it: the description without the parameter section,
and each parameter's description in its schema — Google, NumPy and Sphinx styles."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field

from toolreel.shell import tool


def google(city: str, days: int = 1) -> str:
    """Get the forecast for a city.

    Looks a few days ahead.

    Args:
        city: The city's name,
            as people write it.
        days (int): How many days ahead.

    Returns:
        The forecast, one line a day.
    """
    return city


def numpy(city: str, days: int = 1) -> str:
    """Get the forecast for a city.

    Looks a few days ahead.

    Parameters
    ----------
    city : str
        The city's name,
        as people write it.
    days : int
        How many days ahead.

    Returns
    -------
    str
        The forecast, one line a day.
    """
    return city


def sphinx(city: str, days: int = 1) -> str:
    """Get the forecast for a city.

    Looks a few days ahead.

    :param city: The city's name,
        as people write it.
    :type city: str
    :param int days: How many days ahead.
    :returns: The forecast, one line a day.
    """
    return city


@pytest.mark.parametrize(
    ("function", "returns"),
    [
        (google, "Returns:\n    The forecast, one line a day."),
        (numpy, "Returns\n-------\nstr\n    The forecast, one line a day."),
        (sphinx, ":returns: The forecast, one line a day."),
    ],
)
def test_each_style_gives_the_description_and_the_parameters_descriptions(
    function: Any, returns: str
) -> None:
    made = tool(function)
    summary = "Get the forecast for a city.\n\nLooks a few days ahead."
    assert made.description == f"{summary}\n\n{returns}"
    assert made.parameters["properties"] == {
        "city": {"type": "string", "description": "The city's name, as people write it."},
        "days": {"type": "integer", "description": "How many days ahead."},
    }


def test_a_docstring_without_a_parameter_section_is_the_description_as_it_is() -> None:
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args are never negative here.
        """
        return a + b

    made = tool(add)
    assert made.description == "Add two integers.\n\nArgs are never negative here."
    assert made.parameters["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}


def test_annotated_descriptions_win_over_the_docstrings() -> None:
    def search(
        query: Annotated[str, "What to look for"],
        limit: Annotated[int, Field(le=50, description="At most this many")] = 10,
        lang: str = "en",
    ) -> str:
        """Search.

        Args:
            query: Overridden.
            limit: Overridden too.
            lang: The language.
            unknown: A parameter the function does not have.
        """
        return query

    assert tool(search).parameters["properties"] == {
        "query": {"type": "string", "description": "What to look for"},
        "limit": {"type": "integer", "maximum": 50, "description": "At most this many"},
        "lang": {"type": "string", "description": "The language."},
    }


def test_an_explicit_description_replaces_the_docstrings_but_keeps_its_parameters() -> None:
    made = tool(description="Forecast.")(google)
    assert made.description == "Forecast."
    assert made.parameters["properties"]["days"]["description"] == "How many days ahead."
