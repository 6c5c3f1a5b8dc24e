"""A tool module as a pydantic-ai user writes one, used as it is by test_pydantic_e2e.py.

Pydantic models for parameters and results, a field validator, `Field` constraints
and descriptions, and one docstring style per tool (Google, NumPy, Sphinx). Nothing
in it is toolreel's but the `tool` decorator. `from __future__ import annotations`
on purpose: every annotation is a string toolreel must resolve.
"""

from __future__ import annotations

import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator

from toolreel.shell import tool


class Location(BaseModel):
    """A place on Earth."""

    city: str = Field(description="The city's name, e.g. 'Delft'")
    country: str = Field(default="NL", min_length=2, max_length=2)

    @field_validator("city")
    @classmethod
    def capitalised(cls, city: str) -> str:
        """Cities are proper names."""
        if not city[:1].isupper():
            raise ValueError("write the city with a capital letter")
        return city


class Forecast(BaseModel):
    """The weather expected at a place on a day."""

    location: Location
    day: datetime.date
    high_c: float
    conditions: Literal["sunny", "cloudy", "rain"]


#: What each tool was called with, in order (the tests read it).
calls: list[tuple[str, tuple[object, ...]]] = []


@tool
def weather(
    loc: Location, day: datetime.date, units: Literal["metric", "imperial"] = "metric"
) -> Forecast:
    """Get the weather forecast for a place and a day.

    Use this before answering any question about the weather.

    Args:
        loc: Where to forecast.
        day: The day to forecast (ISO 8601).
        units: The unit system of the temperatures.

    Returns:
        The forecast.
    """
    calls.append(("weather", (loc, day, units)))
    return Forecast(location=loc, day=day, high_c=21.5, conditions="sunny")


@tool
def to_fahrenheit(
    celsius: Annotated[float, Field(ge=-273.15, description="Degrees Celsius")],
) -> float:
    """Convert a temperature to degrees Fahrenheit.

    Parameters
    ----------
    celsius
        Overridden by the Field's description.
    """
    calls.append(("to_fahrenheit", (celsius,)))
    return celsius * 9 / 5 + 32


@tool
def pack(
    stops: list[Location], nights: Annotated[int, "Nights away"], note: str | None = None
) -> str:
    """Plan what to pack for a trip.

    :param stops: The places visited, in order.
    :param nights: Not used: the Annotated description wins.
    :param note: Anything the traveller said.
    """
    calls.append(("pack", (stops, nights, note)))
    return f"{nights} nights: {', '.join(stop.city for stop in stops)}"
