"""Typed tools: a Pydantic model, a date and a Literal as parameters, checked before the call.

    python examples/typed_tools.py                      # offline: a function plays the model
    python examples/typed_tools.py --base-url http://127.0.0.1:11434/v1 --model qwen2.5
    OPENAI_API_KEY=sk-... python examples/typed_tools.py

The tool's schema comes from its signature and docstring. Offline, a function plays the
model: it first calls the tool with a country code that is too long, reads the error the
loop sends back, and calls again correctly.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
from typing import Literal

import anyio
from pydantic import BaseModel, Field

from toolreel.core import ChatMessage
from toolreel.shell import AgentOptions, run, tool
from toolreel.testing import FunctionModel, ModelInfo, ToolCalls, call


class Location(BaseModel):
    """A place on Earth."""

    city: str = Field(description="The city's name, e.g. 'Delft'")
    country: str = Field(default="NL", min_length=2, max_length=2)


@tool
def weather(
    loc: Location, day: datetime.date, units: Literal["metric", "imperial"] = "metric"
) -> str:
    """Get the weather forecast for a place and a day.

    Args:
        loc: Where to forecast.
        day: The day to forecast.
        units: The unit system of the temperatures.
    """
    degrees = "21 °C" if units == "metric" else "70 °F"
    return f"{loc.city} ({loc.country}), {day:%A}: sunny, {degrees}"


def stand_in(messages: tuple[ChatMessage, ...], info: ModelInfo) -> str | ToolCalls:
    """The offline model: a wrong call, then a right one, then the answer."""
    rounds = messages[-1].tool_rounds
    if not rounds:
        return ToolCalls([call("weather", loc={"city": "Delft", "country": "NLD"}, day="June")])
    last = rounds[-1].results[0]
    if last.is_error:
        return ToolCalls([call("weather", loc={"city": "Delft"}, day="2025-06-01")])
    return f"The forecast: {last.content}"


def main() -> None:
    """Show the schema the model is offered, then run one prompt."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server's .../v1 URL")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()

    print(weather.description)
    print(json.dumps(weather.parameters["properties"]["day"]))

    real = bool(args.base_url or os.environ.get("OPENAI_API_KEY"))
    options = AgentOptions(
        base_url=args.base_url,
        model=args.model if real else "",
        tools=[weather],
        on_tool_result=lambda result: print("tool:", result.content),
    )
    model = None if real else FunctionModel(stand_in)
    result = anyio.run(lambda: run("Weather in Delft on 1 June 2025?", options, model=model))
    print(result.text)


if __name__ == "__main__":
    main()
