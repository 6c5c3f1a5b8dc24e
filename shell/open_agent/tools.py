"""open_agent's tools: `@tool(name, description, input_schema)` makes a `Tool`.

`input_schema` is either open_agent's short form, `{"a": float, "b": float}`
(every name required, unless its value is a schema dict with a `default`), or
a full JSON Schema (passed through). A `Tool` runs with `await tool.execute(args)`
(or `await tool(args)`), sync handlers included, and is offered to the model as
`tool.to_openai_format()`. Unlike `toolreel.shell.Tool` it converts nothing:
the handler gets the arguments as the model sent them, as open_agent's does.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from toolreel.core import ToolSpec

_JSON_TYPES: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


def _type_to_json_schema(kind: Any) -> dict[str, Any]:
    """The JSON Schema of a Python type; types JSON has no name for are strings."""
    return {"type": _JSON_TYPES.get(kind, "string")}


def _is_json_schema(schema: Mapping[str, Any]) -> bool:
    """Whether `schema` is already a JSON Schema object rather than the short form."""
    return schema.get("type") == "object" or "properties" in schema


def _convert_schema_to_openai(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema object for `parameters`: the short form converted, a full schema as is."""
    if _is_json_schema(schema):
        return dict(schema)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, kind in schema.items():
        if isinstance(kind, Mapping):
            properties[name] = dict(kind)
            if "default" not in kind:
                required.append(name)
        else:
            properties[name] = _type_to_json_schema(kind)
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


class Tool:
    """A tool the model may call: name, description, input schema and handler."""

    def __init__(
        self,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        handler: Callable[[dict[str, Any]], Any],
    ) -> None:
        """Keep the declaration as given (`input_schema` in either form)."""
        self.name = name
        self.description = description
        self.input_schema = input_schema
        self.handler = handler

    def __repr__(self) -> str:
        """The tool's name."""
        return f"Tool(name={self.name!r})"

    async def execute(self, arguments: dict[str, Any]) -> Any:
        """Run the handler on `arguments` (awaited when it is async) and return its value."""
        result = self.handler(arguments)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def __call__(self, arguments: dict[str, Any]) -> Any:
        """The same as `execute`."""
        return await self.execute(arguments)

    def to_openai_format(self) -> dict[str, Any]:
        """The tool as chat.completions' `tools` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _convert_schema_to_openai(self.input_schema),
            },
        }

    @property
    def spec(self) -> ToolSpec:
        """The tool as toolreel's core offers it to the model."""
        return ToolSpec(
            name=self.name,
            description=self.description,
            parameters=_convert_schema_to_openai(self.input_schema),
        )


def tool(
    name: str, description: str, input_schema: Mapping[str, Any]
) -> Callable[[Callable[[dict[str, Any]], Any]], Tool]:
    """Declare a tool: `@tool("add", "Add two numbers", {"a": float, "b": float})`."""

    def decorate(handler: Callable[[dict[str, Any]], Any]) -> Tool:
        return Tool(name, description, input_schema, handler)

    return decorate
