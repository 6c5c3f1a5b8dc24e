"""Values that satisfy a JSON Schema, made deterministically from a seed (for `TestModel`).

`generate(schema, rng)` walks the schema: `const`, `enum`, `type` (a list: its
first non-null member), `anyOf`/`oneOf` (the first branch that gives a valid
value), `allOf` (merged), local `$ref`s, and per type the usual bounds —
string lengths and a few formats, number ranges and `multipleOf`, array
`items`/`prefixItems`/lengths/`uniqueItems`, object `properties`/`required`;
a `pattern` only from a few stock strings. Other keywords (`not`, `if`,
`contains`, ...) are left to the check: `valid_value` checks every value it
makes with `jsonschema` and tries a few more seeds before giving up with
`Unsatisfiable` naming the keyword that refused (`pattern`, `not`, contradictory bounds).
"""

from __future__ import annotations

import math
import random
import re
import string
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError

#: Strings tried, beside a random word, against a `pattern`.
PATTERN_TRIES = ("a", "A", "0", "a1", "abc", "ABC", "123", "a_b", "a-b", "a.b", "a b", "")
#: Generated strings for the formats a tool schema commonly names.
FORMATS = {
    "date": "2024-01-{day:02d}",
    "date-time": "2024-01-{day:02d}T12:00:00Z",
    "time": "12:00:{day:02d}Z",
    "email": "user{day}@example.com",
    "uri": "https://example.com/{day}",
    "url": "https://example.com/{day}",
    "uuid": "00000000-0000-4000-8000-0000000000{day:02d}",
    "ipv4": "192.0.2.{day}",
    "hostname": "host{day}.example.com",
}
ATTEMPTS = 8
MAX_DEPTH = 12
#: Past this depth only what is required is made (a recursive schema's optional parts end).
LEAN_DEPTH = 4


class Unsatisfiable(Exception):
    """A schema no value can be generated for; `keyword` is the one that defeated it."""

    def __init__(self, keyword: str, detail: str) -> None:
        """Name the keyword and why."""
        super().__init__(detail)
        self.keyword = keyword


def valid_value(schema: Mapping[str, Any], seed: str) -> Any:
    """A value `schema` accepts (checked with jsonschema), from `seed`; else Unsatisfiable."""
    try:
        validator = jsonschema.Draft202012Validator(schema)
        validator.check_schema(schema)
    except SchemaError as exc:
        raise Unsatisfiable("schema", f"not a valid JSON Schema: {exc.message}") from exc
    problem: Unsatisfiable | None = None
    for attempt in range(ATTEMPTS):
        try:
            value = Generator(schema, random.Random(f"{seed}:{attempt}")).value(schema)
        except Unsatisfiable as exc:
            problem = exc
            continue
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return value
        problem = Unsatisfiable(str(error.validator), error.message)
    assert problem is not None
    raise problem


class Generator:
    """One walk over a schema (its root resolves `$ref`s) with one random source."""

    def __init__(self, root: Mapping[str, Any], rng: random.Random) -> None:
        """Keep the root and the random source."""
        self.root = root
        self.rng = rng
        self.depth = 0

    def value(self, schema: Any) -> Any:
        """A value for `schema` (a bool schema: `true` is anything, `false` nothing)."""
        if schema is True or schema == {}:
            return self.text({})
        if not isinstance(schema, Mapping):
            raise Unsatisfiable("false", "the schema `false` accepts no value")
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise Unsatisfiable("$ref", "the schema nests (or recurses) too deeply")
            return self._value(schema)
        finally:
            self.depth -= 1

    def _value(self, schema: Mapping[str, Any]) -> Any:
        """The keywords in the order they decide: refs, constants, combinations, then type."""
        if "$ref" in schema:
            merged = {**self.resolve(schema["$ref"]), **schema}
            del merged["$ref"]
            return self.value(merged)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            if not schema["enum"]:
                raise Unsatisfiable("enum", "an empty enum accepts no value")
            return self.rng.choice(list(schema["enum"]))
        if "allOf" in schema:
            return self.value(_merged(schema))
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema:
                return self.branch(schema, keyword)
        return self.typed(schema, _type_of(schema))

    def resolve(self, ref: Any) -> Mapping[str, Any]:
        """A local `#/...` reference in the root schema."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise Unsatisfiable("$ref", f"only local references are followed, not {ref!r}")
        node: Any = self.root
        for escaped in filter(None, ref[1:].split("/")):
            part = escaped.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise Unsatisfiable("$ref", f"{ref!r} points at nothing")
            node = node[part]
        if not isinstance(node, Mapping):
            raise Unsatisfiable("$ref", f"{ref!r} is not a schema")
        return node

    def branch(self, schema: Mapping[str, Any], keyword: str) -> Any:
        """The first branch (non-null ones first) a value can be made for, with the siblings."""
        rest = {key: item for key, item in schema.items() if key != keyword}
        options = sorted(schema[keyword], key=lambda item: _type_of(item) == "null")
        failed: Unsatisfiable | None = None
        for option in options:
            try:
                return self.value({**rest, **option} if isinstance(option, Mapping) else option)
            except Unsatisfiable as exc:
                failed = exc
        raise failed or Unsatisfiable(keyword, f"`{keyword}` has no branch")

    def typed(self, schema: Mapping[str, Any], kind: str) -> Any:
        """A value of the JSON type `kind`."""
        makers: dict[str, Callable[[Mapping[str, Any]], Any]] = {
            "string": self.text,
            "integer": self.integer,
            "number": self.number,
            "boolean": lambda _: self.rng.random() < 0.5,
            "null": lambda _: None,
            "array": self.array,
            "object": self.mapping,
        }
        if kind not in makers:
            raise Unsatisfiable("type", f"unknown type {kind!r}")
        return makers[kind](schema)

    def text(self, schema: Mapping[str, Any]) -> str:
        """A short word within `minLength`/`maxLength`, or a string of a known `format`."""
        low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
        day = self.rng.randint(1, 28)
        if schema.get("format") in FORMATS:
            made = FORMATS[schema["format"]].format(day=day)
            if low <= len(made) and (high is None or len(made) <= high):
                return made
        top = max(low, 8) if high is None else int(high)
        if top < low:
            raise Unsatisfiable("maxLength", f"maxLength {high} is below minLength {low}")
        size = self.rng.randint(low, min(top, max(low, 8)))
        word = "".join(self.rng.choice(string.ascii_lowercase) for _ in range(size))
        if "pattern" not in schema:
            return word
        for candidate in (word, *PATTERN_TRIES):
            fits = low <= len(candidate) and (high is None or len(candidate) <= high)
            if fits and re.search(schema["pattern"], candidate):
                return candidate
        raise Unsatisfiable("pattern", f"no generated string matches {schema['pattern']!r}")

    def integer(self, schema: Mapping[str, Any]) -> int:
        """An integer within the bounds, a multiple of `multipleOf` if given."""
        low, high = _bounds(schema, step=1)
        low, high = math.ceil(low), math.floor(high)
        step = schema.get("multipleOf")
        if step:
            first, last = math.ceil(low / step), math.floor(high / step)
            if first > last or not float(step).is_integer():
                raise Unsatisfiable("multipleOf", f"no multiple of {step} in [{low}, {high}]")
            return int(self.rng.randint(first, last) * step)
        if low > high:
            raise Unsatisfiable("maximum", f"no integer in [{low}, {high}]")
        return self.rng.randint(low, high)

    def number(self, schema: Mapping[str, Any]) -> float | int:
        """A number within the bounds (a multiple of `multipleOf` if given)."""
        if schema.get("multipleOf"):
            return (
                self.integer(schema)
                if float(schema["multipleOf"]).is_integer()
                else (self._multiple(schema))
            )
        low, high = _bounds(schema, step=0.0)
        if low > high:
            raise Unsatisfiable("maximum", f"no number in [{low}, {high}]")
        value = round(self.rng.uniform(low, high), 2)
        return value if low <= value <= high else low

    def _multiple(self, schema: Mapping[str, Any]) -> float:
        """A multiple of a fractional `multipleOf` within the bounds."""
        step = float(schema["multipleOf"])
        low, high = _bounds(schema, step=0.0)
        first, last = math.ceil(low / step), math.floor(high / step)
        if first > last:
            raise Unsatisfiable("multipleOf", f"no multiple of {step} in [{low}, {high}]")
        return self.rng.randint(first, last) * step

    def array(self, schema: Mapping[str, Any]) -> list[Any]:
        """`prefixItems`, then `items`, between `minItems` and `maxItems` (distinct if unique)."""
        prefix = list(schema.get("prefixItems", ()))
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", max(low, len(prefix), 2)))
        if high < low:
            raise Unsatisfiable("maxItems", f"maxItems {high} is below minItems {low}")
        size = self.rng.randint(max(low, min(len(prefix), high)), max(low, min(high, 2)))
        if self.depth > LEAN_DEPTH:
            size = low
        items = schema.get("items", {} if prefix else True)
        made: list[Any] = []
        for index in range(size):
            item = prefix[index] if index < len(prefix) else items
            if item is False:
                break
            made.append(
                self.distinct(item, made) if schema.get("uniqueItems") else self.value(item)
            )
        return made

    def distinct(self, schema: Any, made: list[Any]) -> Any:
        """A value for `schema` not already in `made`."""
        for _ in range(ATTEMPTS):
            value = self.value(schema)
            if value not in made:
                return value
        raise Unsatisfiable("uniqueItems", "too few distinct values for uniqueItems")

    def mapping(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """Every required property, then the optional ones while `maxProperties` allows."""
        properties = dict(schema.get("properties", {}))
        required = list(schema.get("required", ()))
        room = int(schema.get("maxProperties", len(properties) + len(required)))
        made: dict[str, Any] = {}
        optional = [] if self.depth > LEAN_DEPTH else [p for p in properties if p not in required]
        for name in [*required, *optional]:
            if len(made) >= room and name not in required:
                break
            made[name] = self.value(properties.get(name, schema.get("additionalProperties", {})))
        for index in range(len(made), int(schema.get("minProperties", 0))):
            extra = schema.get("additionalProperties", {})
            if extra is False:
                raise Unsatisfiable("minProperties", "minProperties needs more properties")
            made[f"extra_{index}"] = self.value(extra)
        return made


def _type_of(schema: Any) -> str:
    """The type a schema asks for: its `type` (the first non-null of a list), else inferred."""
    if not isinstance(schema, Mapping):
        return ""
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [item for item in kind if item != "null"] or kind
        kind = kinds[0] if kinds else "null"
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if "minimum" in schema or "maximum" in schema:
        return "number"
    return "string"


def _bounds(schema: Mapping[str, Any], *, step: float) -> tuple[float, float]:
    """The inclusive range a number may take (open ends nudged in by `step`, or a little)."""
    low = schema.get("minimum", -math.inf)
    high = schema.get("maximum", math.inf)
    if "exclusiveMinimum" in schema:
        low = max(low, schema["exclusiveMinimum"] + (step or 0.01))
    if "exclusiveMaximum" in schema:
        high = min(high, schema["exclusiveMaximum"] - (step or 0.01))
    if low == -math.inf and high == math.inf:
        return 0, 100
    if low == -math.inf:
        return high - 100, high
    if high == math.inf:
        return low, low + 100
    return low, high


def _merged(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`allOf` folded into one schema: properties and required lists joined, the rest overlaid."""
    merged = {key: item for key, item in schema.items() if key != "allOf"}
    for part in schema["allOf"]:
        if not isinstance(part, Mapping):
            continue
        for key, item in part.items():
            if key == "properties":
                merged["properties"] = {**merged.get("properties", {}), **item}
            elif key == "required":
                merged["required"] = [*merged.get("required", ()), *item]
            else:
                merged[key] = item
    return merged
