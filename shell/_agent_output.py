"""The output tool: its schema, turning its arguments into the output, reflection, validation.

    OutputTool.of(Invoice, name="record_invoice", description="Record the invoice")
    OutputTool.of(Invoice, name=..., description=..., reflection_handler=show_invoice)
    OutputTool.from_schema({"type": "object", ...}, name=..., description=...)

With a `reflection_handler` the output is *reflective*: the core offers
`submit`, and each output-tool call runs the handler on the output (typed) and
shows the model what it returns. Without one, no `submit` exists. The two are
`ReflectiveOutput` and `PlainOutput` in the core; nothing else can say
whether `submit` exists.

`OutputTool.of` takes a Pydantic model, a TypedDict, an attrs class or a
dataclass. Validation (the shell's answer to `Validate`) is the schema first —
the arguments converted into the output type (Pydantic's validation for a
model, toolreel's strict converter otherwise: shell/_conversion.py), or for
`from_schema` the `jsonschema` package's Draft 2020-12 validator, problems
listed by path — then, once the output has its type, the custom validators in
order.
"""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

import attrs
from returns.result import Failure, Result, Success

from toolreel.core import ConfigError, OutputSpec, PlainOutput, ReflectiveOutput, ToolSpec
from toolreel.core.record import Value

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

from . import _checks as check
from ._conversion import converter_for, output_problems
from ._images import ToolOutput
from ._pydantic import uses_pydantic
from ._schema import Undescribable, type_schema
from ._tools import _call, describe, result_text

T = TypeVar("T")
Validator: TypeAlias = Callable[[T], Iterable[str] | Awaitable[Iterable[str] | None] | None]


def _structurer(output_type: type[T]) -> Callable[[Any], Result[T, list[str]]]:
    """Arguments -> the typed output, or every problem by field (`$.total: ...`)."""
    convert = converter_for(output_type)

    def structure(arguments: Any) -> Result[T, list[str]]:
        try:
            return Success(convert(arguments))
        except Exception as exc:
            return Failure(output_problems(exc))

    return structure


def _schema_checker(schema: Mapping[str, Any]) -> Callable[[Any], Result[Any, list[str]]]:
    """Arguments -> themselves when they satisfy `schema`, or every problem by path.

    An invalid schema is a ConfigError here, when the output tool is built,
    rather than a failure in the middle of a run.
    """
    import jsonschema  # noqa: PLC0415 - loaded with the first schema, not with toolreel.shell
    from jsonschema.exceptions import SchemaError  # noqa: PLC0415

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = exc.json_path.replace("$", "schema", 1)
        raise ConfigError(
            "schema", schema, f"a valid JSON Schema ({where}: {exc.message})"
        ) from exc
    validator = jsonschema.Draft202012Validator(schema)

    def check(arguments: Any) -> Result[Any, list[str]]:
        try:
            found = [p for error in validator.iter_errors(arguments) for p in _problems(error)]
        except jsonschema.exceptions.RefResolutionError as exc:  # a $ref that cannot be resolved
            found = [f"$: the schema cannot be checked: {exc}"]
        problems = list(dict.fromkeys(found))  # `required` reports each missing name once
        return Failure(problems) if problems else Success(arguments)

    return check


def _shown(value: Any) -> str:
    """A value as JSON, cut short."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _problems(error: ValidationError) -> list[str]:
    """One jsonschema error in the words the model reads, each problem with its path."""
    path = error.json_path
    wanted: Any = error.validator_value  # typed `Any | Unset`: always set on a reported error
    value: Any = error.instance
    match error.validator:
        case "required":
            return [
                f"{_field(path, name)}: required field missing"
                for name in wanted
                if name not in value
            ]
        case "additionalProperties" if wanted is False:
            return [f"{_field(path, name)}: unexpected field" for name in _extra_fields(error)]
        case "type":
            names = [wanted] if isinstance(wanted, str) else list(wanted)
            return [f"{path}: expected {' or '.join(names)}, got {_shown(value)}"]
        case "enum":
            allowed = ", ".join(_shown(option) for option in wanted)
            return [f"{path}: expected one of {allowed}, got {_shown(value)}"]
        case "const":
            return [f"{path}: expected {_shown(wanted)}, got {_shown(value)}"]
        case "anyOf":
            return [f"{path}: matches none of the allowed forms"]
    bound = _BOUNDS.get(str(error.validator))
    return [f"{path}: {bound.format(wanted, value) if bound else error.message}"]


def _field(path: str, name: str) -> str:
    """The path of field `name` of the object at `path`, written as jsonschema writes paths."""
    if re.fullmatch(r"[a-zA-Z][a-zA-Z0-9_]*", name):
        return f"{path}.{name}"
    escaped = name.replace("\\", "\\\\").replace("'", "\\'")
    return f"{path}['{escaped}']"


#: The bounds' wording, as `str.format(limit, value)`; other keywords keep jsonschema's.
_BOUNDS = {
    "minimum": "must be at least {0}, got {1}",
    "maximum": "must be at most {0}, got {1}",
    "exclusiveMinimum": "must be more than {0}, got {1}",
    "exclusiveMaximum": "must be less than {0}, got {1}",
    "minLength": "must have at least {0} characters",
    "maxLength": "must have at most {0} characters",
    "minItems": "must have at least {0} items",
    "maxItems": "must have at most {0} items",
}


def _extra_fields(error: ValidationError) -> list[str]:
    """The fields `additionalProperties: false` refused: in neither properties nor patterns."""
    schema: Any = error.schema
    value: Any = error.instance
    known, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    return [
        name
        for name in value
        if name not in known and not any(re.search(pattern, name) for pattern in patterns)
    ]


def _object_schema(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """The `parameters` field holds an object schema (see `_check_schema`)."""
    _check_schema(attribute.name, value)


def _check_schema(field: str, value: Any) -> None:
    """A JSON Schema of an object: the model's arguments are always an object."""
    if not isinstance(value, Mapping) or value.get("type", "object") != "object":
        raise ConfigError(field, value, "a JSON Schema (a dict) of type 'object'")


#: What `OutputTool.of` takes, as its ConfigError says it.
_OUTPUT_TYPES = "a Pydantic model, a TypedDict, an attrs class or a dataclass"


def _is_record(kind: type) -> bool:
    """Whether `kind` describes an object by its fields (a plain bool: no narrowing of `kind`)."""
    return (
        attrs.has(kind)
        or dataclasses.is_dataclass(kind)
        or typing.is_typeddict(kind)
        or uses_pydantic(kind)
    )


def _output_schema(output_type: Any) -> dict[str, Any]:
    """The output tool's parameters: the type's schema, which must describe an object."""
    if not _is_record(output_type):
        raise ConfigError("output_type", output_type, _OUTPUT_TYPES)
    try:
        schema = type_schema(output_type)
    except Undescribable as exc:
        raise ConfigError("output_type", output_type, f"{_OUTPUT_TYPES} ({exc})") from exc
    if schema.get("type") != "object":
        raise ConfigError("output_type", output_type, f"{_OUTPUT_TYPES} (an object's schema)")
    return schema


@attrs.frozen(kw_only=True, repr=False, eq=False)
class OutputTool(Value, Generic[T]):
    """The tool whose arguments are the agent's output; build it with `of` or `from_schema`."""

    name: str = attrs.field(validator=check.name)
    description: str = attrs.field(validator=check.instance_of(str, "a str"))
    parameters: Mapping[str, Any] = attrs.field(validator=_object_schema)
    parse: Callable[[Any], Result[T, list[str]]] = attrs.field(validator=check.a_callable)
    reflection_handler: Callable[[T], Any] | None = attrs.field(
        default=None, validator=check.callable_or_none
    )

    @classmethod
    def of(
        cls,
        output_type: type[T],
        *,
        name: str = "output",
        description: str = "Record your final output.",
        reflection_handler: Callable[[T], Any] | None = None,
    ) -> OutputTool[T]:
        """An output tool for a Pydantic model, TypedDict, attrs class or dataclass.

        The schema is the type's (Pydantic's own for a model); the model's
        arguments are validated into an instance (by Pydantic for a model).
        """
        return cls(
            name=name,
            description=description,
            parameters=_output_schema(output_type),
            parse=_structurer(output_type),
            reflection_handler=reflection_handler,
        )

    @classmethod
    def from_schema(
        cls,
        schema: Mapping[str, Any],
        *,
        name: str = "output",
        description: str = "Record your final output.",
        reflection_handler: Callable[[dict[str, Any]], Any] | None = None,
    ) -> OutputTool[dict[str, Any]]:
        """An output tool for a JSON Schema; the output is the arguments as a dict.

        The schema must describe an object and be a valid Draft 2020-12 schema
        (else a ConfigError); outputs are checked with `jsonschema`.
        """
        _check_schema("schema", schema)
        return OutputTool[dict[str, Any]](
            name=name,
            description=description,
            parameters=dict(schema),
            parse=_schema_checker(dict(schema)),
            reflection_handler=reflection_handler,
        )

    @property
    def spec(self) -> OutputSpec:
        """The core's view: reflective exactly when there is a reflection handler."""
        tool = ToolSpec(name=self.name, description=self.description, parameters=self.parameters)
        if self.reflection_handler is None:
            return PlainOutput(tool=tool)
        return ReflectiveOutput(tool=tool)

    def structure(self, arguments_json: str) -> Result[T, list[str]]:
        """The output from the output tool's JSON arguments, or what is wrong with it."""
        try:
            arguments = json.loads(arguments_json)
        except ValueError as exc:
            return Failure([f"$: not valid JSON: {exc}"])
        return self.parse(arguments)

    async def reflect(self, arguments_json: str) -> Result[str | ToolOutput, str]:
        """The reflection handler's text for one output-tool call, or an error for the model."""
        handler = self.reflection_handler
        if handler is None:
            return Failure(f"{self.name} has no reflection handler")
        match self.structure(arguments_json):
            case Failure(problems):
                listed = "\n".join(f"- {problem}" for problem in problems)
                return Failure(f"The output does not match the schema of {self.name}:\n{listed}")
            case Success(output):
                pass
        try:
            value = await _call(handler, (output,), {})
        except (Exception, SystemExit) as exc:  # sys.exit in a callback too
            return Failure(describe(exc))
        return result_text(self.name, value)


async def check_output(
    output: OutputTool[T], validators: Sequence[Validator[T]], arguments_json: str
) -> Result[T, tuple[str, ...]]:
    """The typed output if it passes the schema then every validator; else all problems found.

    A validator that raises is a problem too ("validator NAME raised ..."), never a crash.
    """
    match output.structure(arguments_json):
        case Failure(by_field):
            return Failure(tuple(by_field))
        case Success(value):
            pass
    problems: list[str] = []
    for validator in validators:
        try:
            found = await _call(validator, (value,), {})
        except (Exception, SystemExit) as exc:  # sys.exit in a callback too
            name = getattr(validator, "__name__", repr(validator))
            problems.append(f"validator {name} raised {type(exc).__name__}: {exc}")
            continue
        problems.extend(str(problem) for problem in found or ())
    return Failure(tuple(problems)) if problems else Success(value)
