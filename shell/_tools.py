"""Tools: the `tool` decorator, argument validation, and running a call.

Two ways to declare a tool, both giving a `Tool`:

    @tool("add", "Add two numbers", {"a": float, "b": float})   # open_agent style:
    async def add(args): return {"result": args["a"] + args["b"]}   # handler(args: dict)

    @tool                                                        # a typed function:
    def add(a: float, b: float) -> float:                        # keyword arguments,
        "Add two numbers."                                       # docstring = description
        return a + b

A typed function's parameters are described to the model by their types
(shell/_schema.py: scalars, containers, Literal, Enum, dates, TypedDict, attrs
classes, dataclasses, Pydantic models) and by its docstring (shell/_docstring.py:
the description without its `Args:` section, and each parameter's line there),
or an `Annotated[T, "description"]`. A type with no JSON Schema is a ConfigError
when the tool is declared, naming the parameter.

The model's arguments are checked and converted to the declared types before
the call (shell/_conversion.py); a mismatch is an error result naming the
argument, so the model can call again. Return values become JSON text (attrs,
dataclass and Pydantic instances included); a returned `str` is sent as it is.
"""

from __future__ import annotations

import datetime
import importlib
import inspect
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Generic, overload

import anyio
import attrs
import sniffio
from returns.result import Failure, Result, Success
from typing_extensions import ParamSpec, TypeVar

from toolreel.core import ConfigError, ToolCall, ToolSpec, arguments_object
from toolreel.core.record import Record

from ._conversion import Convert, argument_problem, converter_for, json_text, strict_converter
from ._docstring import read_docstring
from ._images import ToolOutput, tool_output
from ._named_types import DECIMAL, UUID, instance_of
from ._schema import (
    DESCRIBABLE,
    Undescribable,
    annotated_description,
    object_schema,
    signature_types,
    type_schema,
)

if TYPE_CHECKING:
    import anyio.to_thread

#: A tool's parameters and return type: its function's, for callers (a bare `Tool` is any).
P = ParamSpec("P", default=...)
R = TypeVar("R", default=Any)


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Tool(Record, Generic[P, R]):
    """A callable the model may use: its spec, its handler and how to call it.

    Calling the tool calls its function as it is (`add(2, 3) == 5`; an async
    one gives its awaitable), so a decorated function stays usable, and
    testable, as the function it was; type checkers see its signature.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Callable[P, R]
    argument_types: Mapping[str, Any]
    required: tuple[str, ...] = ()
    takes_args_dict: bool = False
    timeout: float | None = None
    idempotent: bool = False
    #: Each call waits for a human's `Client.approve` / `Client.deny` before it runs.
    requires_approval: bool = False
    #: How each typed argument is converted (shell/_conversion.py), built with the tool.
    converters: Mapping[str, Convert] = attrs.field(
        init=False,
        repr=False,
        default=attrs.Factory(
            lambda self: {name: converter_for(kind) for name, kind in self.argument_types.items()},
            takes_self=True,
        ),
    )

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function itself, unchecked and in this thread: what its callers expect."""
        return self.handler(*args, **kwargs)

    @property
    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def convert(self, arguments: Mapping[str, Any]) -> Result[dict[str, Any], str]:
        """The arguments checked and converted to the declared types, or what is wrong."""
        missing = [name for name in self.required if name not in arguments]
        if missing:
            return Failure(f"missing required argument(s): {', '.join(missing)}")
        unknown = sorted(set(arguments) - set(self.argument_types))
        if unknown and not self.takes_args_dict:
            return Failure(f"unexpected argument(s): {', '.join(unknown)}")
        converted = dict(arguments)
        wrong: list[str] = []
        for name, convert in self.converters.items():
            if name in arguments:
                try:
                    converted[name] = convert(arguments[name])
                except Exception as exc:
                    wrong.append(argument_problem(name, exc))
        return Failure("; ".join(wrong)) if wrong else Success(converted)

    async def execute(self, arguments: Mapping[str, Any]) -> Any:
        """Call the handler with `arguments` (converted first) and return what it returns."""
        converted = self.convert(arguments)
        if isinstance(converted, Failure):
            raise ValueError(converted.failure())
        return await self._call_with(converted.unwrap())

    async def _call_with(self, converted: dict[str, Any]) -> Any:
        """Call the handler with arguments already converted."""
        if self.takes_args_dict:
            return await _call(self.handler, (converted,), {})
        return await _call(self.handler, (), converted)

    async def run(self, arguments_json: str) -> Result[str | ToolOutput, str]:
        """Run one call from the model's JSON arguments: output text, or an error for the model."""
        try:
            arguments = json.loads(arguments_json)
        except ValueError as exc:
            return Failure(f"arguments are not valid JSON: {exc}")
        converted = self.convert(arguments if isinstance(arguments, dict) else {})
        if isinstance(converted, Failure):
            return Failure(
                f"Invalid arguments for tool {self.name}: {converted.failure()}. "
                "Fix the arguments and call the tool again."
            )
        try:
            value = await self._call_with(converted.unwrap())
        except Exception as exc:
            return Failure(describe(exc))
        except BaseException as exc:  # SystemExit, KeyboardInterrupt, CancelledError, ...
            if not raised_by_tool(exc):
                raise
            return Failure(describe(exc))
        return result_text(self.name, value)


class Escaped(Exception):
    """What a sync handler raised in its worker thread that is no `Exception` (SystemExit, ...).

    Signals and cancellation never reach a worker thread, so whatever it
    raises is the handler's own doing: carried to the event loop as an
    ordinary exception, it cannot end the program or cancel the run.
    """

    def __init__(self, original: BaseException) -> None:
        """Keep what the handler raised."""
        super().__init__(describe(original))
        self.original = original


def describe(exc: BaseException) -> str:
    """An exception as the model reads it: its type, then its message, if any."""
    if isinstance(exc, Escaped):
        exc = exc.original
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def raised_by_tool(exc: BaseException) -> bool:
    """Whether a BaseException from an async handler is its own, not a real cancel or Ctrl-C.

    A KeyboardInterrupt in the event loop's thread may be a real Ctrl-C, and a
    cancellation while the run is being cancelled is real: both propagate.
    SystemExit (argparse, click, `sys.exit`) and a CancelledError the tool
    raised itself become error results.
    """
    if isinstance(exc, KeyboardInterrupt):
        return False
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return not cancel_pending()
    return True


def cancel_pending() -> bool:
    """Whether the current task is being cancelled (an anyio scope, or asyncio's `cancel()`)."""
    if anyio.current_effective_deadline() == -math.inf:
        return True
    if sniffio.current_async_library() == "asyncio":
        import asyncio  # noqa: PLC0415 - running, so imported: toolreel's import does not

        task = asyncio.current_task()
        return task is not None and task.cancelling() > 0
    return False


def result_text(name: str, value: Any) -> Result[str | ToolOutput, str]:
    """A tool's return value as text (with its images, if any: shell/_images.py), or an error
    naming the type that cannot be sent."""
    try:
        return Success(tool_output(value, output_text) or output_text(value))
    except Exception as exc:
        return Failure(
            f"tool {name} returned a {type(value).__name__} that cannot be turned into text "
            f"({describe(exc)}); return a str, a number, a list, a dict or an attrs class"
        )


async def _call(handler: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Await an async handler; run a sync one in a worker thread (abandoned if cancelled)."""
    if inspect.iscoroutinefunction(handler):
        return await handler(*args, **kwargs)

    def in_thread() -> Any:
        try:
            return handler(*args, **kwargs)
        except Exception:
            raise
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: the handler's own
            raise Escaped(exc) from exc

    result = await anyio.to_thread.run_sync(in_thread, abandon_on_cancel=True)
    if inspect.isawaitable(result):
        return await result
    return result


def output_text(value: Any) -> str:
    """A tool's return value as the text the model reads (TypeError if it has none).

    A `str` as it is; anything else as JSON, attrs and dataclass instances,
    enums, dates, paths, UUIDs and decimals included. A value JSON cannot
    hold (a set, a socket, an arbitrary object) is refused rather than sent
    as its repr.
    """
    if isinstance(value, str):
        return value
    try:  # plain JSON values need no converter (nor cattrs loaded for them)
        return json_text(value, lambda v: strict_converter().unstructure(v), _scalar)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


def _scalar(value: Any) -> Any:
    """JSON for the few standard types that have an obvious text form; TypeError otherwise."""
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, PurePath) or instance_of(value, DECIMAL, UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _schema_style(
    schema: Mapping[str, Any], owner: str
) -> tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]:
    """open_agent's `{"a": float}` (or a full JSON Schema): schema, types, required names."""
    if schema.get("type") == "object" or "properties" in schema:
        return dict(schema), {}, tuple(schema.get("required", ()))
    names = tuple(schema)
    return _parameters(dict(schema), names, {}, owner), dict(schema), names


def _parameters(
    types_: Mapping[str, Any], required: Sequence[str], docs: Mapping[str, str], owner: str
) -> dict[str, Any]:
    """The parameters' object schema, each described by its Annotated or else its docstring.

    A type with no JSON Schema is a ConfigError naming the tool and parameter.
    """
    properties: dict[str, Any] = {}
    for name, kind in types_.items():
        try:
            properties[name] = type_schema(kind)
        except Undescribable as exc:
            raise ConfigError(f"{owner}({name})", kind, f"{DESCRIBABLE} ({exc})") from exc
        description = annotated_description(kind) or docs.get(name)
        if description:
            properties[name]["description"] = description
    try:
        return object_schema(properties, required)
    except Undescribable as exc:
        raise ConfigError(owner, types_, str(exc)) from exc


def _signature(handler: Callable[..., Any], owner: str) -> tuple[dict[str, Any], list[str]]:
    """The handler's parameter types and required names; unresolvable ones a ConfigError."""
    try:
        return signature_types(handler)
    except Exception as exc:  # NameError: a name imported only under TYPE_CHECKING, a typo
        raise ConfigError(
            owner, handler, f"annotations toolreel can resolve ({type(exc).__name__}: {exc})"
        ) from exc


def _make_tool(
    handler: Callable[P, R],
    *,
    name: str | None,
    description: str | None,
    schema: Mapping[str, Any] | None,
    timeout: float | None,
    idempotent: bool,
    requires_approval: bool = False,
) -> Tool[P, R]:
    """Build a Tool from a handler and what the decorator was told."""
    doc = read_docstring(inspect.getdoc(handler) or "")
    owner = name or getattr(handler, "__qualname__", None) or repr(handler)
    if schema is not None:
        parameters, types_, required = _schema_style(schema, owner)
    else:
        types_, required_list = _signature(handler, owner)
        parameters = _parameters(types_, required_list, doc.parameters, owner)
        required = tuple(required_list)
    return Tool(
        name=name or handler.__name__,
        description=description if description is not None else doc.description,
        parameters=parameters,
        handler=handler,
        argument_types=types_,
        required=required,
        takes_args_dict=schema is not None,
        timeout=timeout,
        idempotent=idempotent,
        requires_approval=requires_approval,
    )


@overload
def tool(name: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    name: str | None = None,
    description: str | None = None,
    schema: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
    idempotent: bool = False,
    requires_approval: bool = False,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(  # the overloads above type it for callers
    name: str | Callable[..., Any] | None = None,
    description: str | None = None,
    schema: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
    idempotent: bool = False,
    requires_approval: bool = False,
) -> Any:
    """Declare a tool: `@tool`, `@tool(timeout=5)`, or `@tool("add", "Add", {"a": float})`.

    A typed function is offered to the model as its signature and docstring say
    (the parameters' descriptions from its Google, NumPy or Sphinx parameter
    section); its arguments are checked and converted before each call. The
    decorated function is still the plain function when called directly.

    Args:
        name: The function itself (`@tool`), or the tool's name (`@tool("add", ...)`;
            default: the function's name).
        description: What the tool does (default: the docstring, less its parameters).
        schema: The arguments' JSON Schema, or a mapping of names to Python types; the
            function then takes the arguments as one dict.
        timeout: Seconds a call may take; overrides the run's `tool_timeout`.
        idempotent: A call may run again when a crash left its outcome unknown.
        requires_approval: Each call waits until a person approves or denies it
            (`Client.approve` / `Client.deny`).

    Returns:
        A `Tool` (with `@tool(...)`: a decorator that makes one).

    Raises:
        ConfigError: A parameter's type has no JSON Schema, or an argument is invalid.
    """
    if callable(name):
        return _make_tool(
            name, name=None, description=None, schema=None, timeout=timeout, idempotent=idempotent
        )
    _check_declaration(name, description, schema, timeout)
    if not isinstance(requires_approval, bool):
        raise ConfigError("requires_approval", requires_approval, "True or False")

    def decorate(handler: Callable[..., Any]) -> Tool:
        return _make_tool(
            handler,
            name=name,
            description=description,
            schema=schema,
            timeout=timeout,
            idempotent=idempotent,
            requires_approval=requires_approval,
        )

    return decorate


def _check_declaration(name: object, description: object, schema: object, timeout: object) -> None:
    """Refuse a declaration that could only fail later (`@tool(5)`, a negative timeout)."""
    if name is not None and (not isinstance(name, str) or not name):
        raise ConfigError("name", name, "a non-empty str, or a function to wrap")
    if description is not None and not isinstance(description, str):
        raise ConfigError("description", description, "a str")
    if schema is not None and not isinstance(schema, Mapping):
        raise ConfigError(
            "schema", schema, "a mapping of argument names to types, or a JSON Schema"
        )
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
    ):
        raise ConfigError("timeout", timeout, "a number of seconds > 0, or None")


def as_tool(item: Any) -> Tool:
    """A Tool as it is; a plain function wrapped with `tool`; anything else a ValueError."""
    if isinstance(item, Tool):
        return item
    if not callable(item) or isinstance(item, type):
        raise ValueError(f"{type(item).__name__} is not a tool or a function")
    try:
        made: Tool = tool(item)
    except Exception as exc:
        raise ValueError(f"cannot make a tool of {item!r}: {exc}") from exc
    return made


def registry(items: Sequence[Any]) -> dict[str, Tool]:
    """Tools by name (plain functions wrapped); two with one name are refused."""
    tools: dict[str, Tool] = {}
    for item in map(as_tool, items):
        if item.name in tools:
            raise ConfigError(
                "tools", item.name, f"unique names (Duplicate tool name: {item.name})"
            )
        tools[item.name] = item
    return tools


def call_arguments(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as a dict ({} when they are not a JSON object)."""
    return arguments_object(call.arguments) or {}


def tools_from_spec(spec: str) -> list[Tool]:
    """The tools `module:attr` names: a Tool, a list of tools, or plain functions.

    Modules beside the working directory are found (as `python -m` finds them);
    anything wrong with the spec is a ValueError saying what.
    """
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise ValueError(f"expected MODULE:ATTR, got {spec!r}")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # find modules beside you, as `python -m` does
    try:
        value: Any = importlib.import_module(module_name)
    except Exception as exc:  # a missing module, or one that fails as it is imported
        raise ValueError(f"cannot import {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(value, part):
            raise ValueError(f"{module_name!r} has no attribute {attr!r}")
        value = getattr(value, part)
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not items:
        raise ValueError(f"{spec} is an empty list")
    for item in items:
        if not isinstance(item, Tool) and (not callable(item) or isinstance(item, type)):
            raise ValueError(f"{spec} holds {type(item).__name__}, not a tool or a function")
    try:
        return [as_tool(item) for item in items]
    except ValueError as exc:
        raise ValueError(f"{spec}: {exc}") from exc


__all__ = [
    "Tool",
    "as_tool",
    "call_arguments",
    "output_text",
    "registry",
    "tool",
    "tools_from_spec",
    "type_schema",
]
