"""`Input`: what an agent's MCP tool takes, and its arguments read into the prompt or input.

- the chat tool takes `{"prompt": "..."}`: a non-empty string, nothing else;
- an agent's tool takes the parameters of its definition's `build_prompt` as
  `@tool` would offer that function (a typed `def build(invoice_text: str)`:
  `{"invoice_text": "..."}`; a Pydantic model or attrs class parameter: that
  object under its name), checked and converted the same way; the one
  parameter's value is the run's input.

Arguments that do not fit are a `Failure` saying what is wrong, in words for
the caller (who may be a model that corrects and calls again).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
from returns.result import Failure, Result, Success

from toolreel.core import ConfigError
from toolreel.core.record import Value
from toolreel.shell import AgentDefinition, tool

#: The chat tool's input schema.
CHAT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "prompt": {"type": "string", "minLength": 1, "description": "What to ask the agent."}
    },
    "required": ["prompt"],
    "additionalProperties": False,
}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Input(Value):
    """An MCP tool's input schema, and how its arguments become the run's input."""

    schema: dict[str, Any]
    read: Callable[[Mapping[str, Any]], Result[Any, str]]


def chat_input() -> Input:
    """The chat tool's: the prompt."""
    return Input(schema=CHAT_SCHEMA, read=_prompt)


def _prompt(arguments: Mapping[str, Any]) -> Result[Any, str]:
    """The prompt, a non-empty string (and no other argument)."""
    prompt = arguments.get("prompt")
    unknown = sorted(set(arguments) - {"prompt"})
    if unknown:
        return Failure(f"unexpected argument(s): {', '.join(unknown)} (it takes only 'prompt')")
    if not isinstance(prompt, str):
        given = "missing" if prompt is None else f"a {type(prompt).__name__}"
        return Failure(f"'prompt' must be a non-empty string, got {given}")
    if not prompt.strip():
        return Failure("'prompt' is empty")
    return Success(prompt)


def definition_input(definition: AgentDefinition[Any, Any]) -> Input:
    """An agent's: its `build_prompt` parameter, as `@tool` offers and converts it."""
    try:
        made = tool(definition.build_prompt)
    except ConfigError as exc:
        raise ConfigError(
            "build_prompt", definition.build_prompt, f"a function with one typed parameter ({exc})"
        ) from exc
    names = list(made.parameters.get("properties", {}))
    if len(names) != 1:
        raise ConfigError(
            "build_prompt", definition.build_prompt, "a function of one parameter (the input)"
        )
    (name,) = names

    def read(arguments: Mapping[str, Any]) -> Result[Any, str]:
        """The input: the one argument, converted to the parameter's type."""
        converted = made.convert(arguments)
        if isinstance(converted, Failure):
            return converted
        return Success(converted.unwrap()[name])

    schema = dict(made.parameters)
    schema.setdefault("required", [name])
    return Input(schema=schema, read=read)
