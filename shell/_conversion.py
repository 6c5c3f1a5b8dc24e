"""The model's JSON values turned into the declared Python types, or told what is wrong.

`converter_for(kind)` is built once per parameter (when `@tool` runs) and
called per argument. Three ways, chosen by the type:

- a type made of scalars, constants, unions and containers of them alone is
  checked by shell/_strict.py directly: a tool of such parameters never loads
  cattrs (PERF.md: its import and the garbage collection it set off cost ~22 ms
  in a process's first conversation);
- a type that uses Pydantic (shell/_pydantic.py) is Pydantic's to validate;
- everything else (TypedDict, attrs classes, dataclasses, and what holds them)
  goes through `strict_converter()`, a cattrs converter built on first use with
  the same strict checks as hooks.

A mismatch raises an exception; `problems(exc)` says what is wrong as
(path, what) pairs whoever raised it (shell/_problems.py), and
`argument_problem` / `output_problems` word them for a tool's argument and
for an agent's output.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _pydantic, _strict
from ._named_types import Name, name_of
from ._problems import Mismatch, Problem, at, join, under

if TYPE_CHECKING:
    import cattrs

Convert = _strict.Convert


def converter_for(kind: Any) -> Convert:
    """How to turn the model's JSON value into a `kind` (raising on a mismatch)."""
    if _pydantic.uses_pydantic(kind):
        return _pydantic_converter(kind)
    return _strict.direct(kind, problems) or (
        lambda value: strict_converter().structure(value, kind)
    )


def _pydantic_converter(kind: Any) -> Convert:
    """Pydantic's validation, its errors as a Mismatch in toolreel's words."""
    validate = _pydantic.validator(kind)

    def convert(value: Any) -> Any:
        try:
            return validate(value)
        except Exception as exc:
            if _pydantic.is_validation_error(exc):
                raise Mismatch(_pydantic.problems(exc)) from exc
            raise

    return convert


@functools.cache
def strict_converter() -> cattrs.Converter:
    """A cattrs converter whose hooks are the strict checks (records are cattrs' own).

    Built on first use: cattrs loads with the first value that needs it, not
    with toolreel.shell nor with a tool of scalar parameters.
    """
    import cattrs  # noqa: PLC0415 - see above

    converter = cattrs.Converter()

    def item(kind: Any) -> Convert:
        return lambda value: converter.structure(value, kind)

    def hook(check: Convert) -> Callable[[Any, Any], Any]:
        return lambda value, _: check(value)

    for kind, check in _strict.SCALARS.items():
        if kind is not object:  # a class hook for `object` would catch every class
            converter.register_structure_hook(kind, hook(check))
    for name, check in _strict.NAMED_SCALARS.items():
        converter.register_structure_hook_func(_named(name), hook(check))
    anything = hook(_strict.SCALARS[object])
    converter.register_structure_hook_func(lambda kind: kind is object, anything)
    factories: list[tuple[Callable[[Any], bool], Callable[[Any], Convert]]] = [
        (_strict.is_literal, _strict.literal),
        (_strict.is_enum, _strict.enumeration),
        (_strict.is_union, lambda kind: _strict.union(kind, item)),
        (_strict.is_sequence, lambda kind: _strict.sequence(kind, item, problems)),
        (_strict.is_mapping, lambda kind: _strict.mapping(kind, item, problems)),
    ]
    for applies, factory in factories:
        converter.register_structure_hook_factory(
            applies, lambda kind, factory=factory: hook(factory(kind))
        )
    converter.register_unstructure_hook_func(
        _pydantic.is_model, lambda model: model.model_dump(mode="json")
    )
    return converter


def problems(exc: Exception) -> list[Problem]:
    """What a conversion error says is wrong, as (path, what), whoever raised it."""
    if isinstance(exc, Mismatch):
        return list(exc.problems)
    if "cattrs" not in sys.modules:  # only the cattrs converter raises anything else
        return [("$", str(exc) or type(exc).__name__)]
    return _cattrs_problems(exc, "$", None)


def _cattrs_problems(exc: BaseException, path: str, kind: Any) -> list[Problem]:
    """A cattrs error group's problems, by field and index (a Mismatch inside: its own)."""
    import cattrs  # noqa: PLC0415 - loaded already: it raised `exc`
    from cattrs.v import format_exception  # noqa: PLC0415

    if isinstance(exc, Mismatch):
        return under(path, exc.problems)
    if isinstance(exc, cattrs.ClassValidationError | cattrs.IterableValidationError):
        with_notes, without = exc.group_exceptions()
        found: list[Problem] = []
        for inner, note in with_notes:
            part = note.name if isinstance(note, cattrs.AttributeValidationNote) else note.index
            found.extend(_cattrs_problems(inner, join(path, part), note.type))
        for inner in without:
            found.extend(_cattrs_problems(inner, path, None))
        return found
    return [(path, format_exception(exc, kind))]


def argument_problem(name: str, exc: Exception) -> str:
    """What is wrong with one argument, for the model: "argument 'b': expected ..."."""
    return f"argument {name!r}: " + "; ".join(at(*problem) for problem in problems(exc))


def output_problems(exc: Exception) -> list[str]:
    """What is wrong with an output, one line per problem: "$.total: expected ..."."""
    return [f"{path}: {what}" for path, what in problems(exc)]


def json_text(value: Any, unstructure: Callable[[Any], Any], default: Callable[[Any], Any]) -> str:
    """`value` as JSON: plain JSON values at once, others through `unstructure` first."""
    try:
        return json.dumps(value, ensure_ascii=False, default=_not_plain)
    except _NotPlain:
        return json.dumps(unstructure(value), ensure_ascii=False, default=default)


class _NotPlain(Exception):
    """A value that is not made of JSON's own types alone."""


def _not_plain(value: Any) -> Any:
    """`json.dumps`'s fallback for what it cannot write: signal it, to unstructure first."""
    raise _NotPlain


def _named(name: Name) -> Callable[[Any], bool]:
    """Whether a type is the class of that name (shell/_named_types.py)."""
    return lambda kind: name_of(kind) == name
