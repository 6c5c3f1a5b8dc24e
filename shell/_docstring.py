"""A tool's docstring read for the model: its description, and one line per parameter.

    def weather(loc: Location, units: str = "metric") -> str:
        '''Get the weather at a place.

        Args:
            loc: Where to look.
            units: "metric" or "imperial".
        '''

gives the description "Get the weather at a place." and the parameter
descriptions {"loc": "Where to look.", "units": '"metric" or "imperial".'}.
Google (`Args:`), NumPy (`Parameters` over a dashed line) and Sphinx
(`:param name:`) docstrings are read. The description is the docstring
without its parameter sections (a `Returns:` section, examples and notes
stay); a docstring without one is the description as it is.

The parameter sections are found here, line by line; what they say about each
parameter is read by griffe (the parser mkdocstrings and pydantic-ai use),
imported only for a docstring that has such a section: `@tool` on a function
with a plain docstring never loads it (its import costs ~30 ms once).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal, TypeAlias

import attrs

from toolreel.core.record import Value

Style: TypeAlias = Literal["google", "numpy", "sphinx"]

#: A Google section header naming parameters, alone on its line (`Args:`).
_GOOGLE = re.compile(
    r"(Args|Arguments|Params|Parameters|Keyword Args|Keyword Arguments|Other Parameters):"
)
#: A NumPy section title naming parameters; the next line is dashes.
_NUMPY = re.compile(r"(Parameters|Other Parameters|Keyword Arguments)")
_DASHES = re.compile(r"-{3,}")
#: A Sphinx field about a parameter (`:param x:`, `:type x:`, ...).
_SPHINX = re.compile(r":(param|parameter|arg|argument|key|keyword|type)\b[^:]*:")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolDoc(Value):
    """What a docstring tells the model: the tool's description, and each parameter's."""

    description: str
    parameters: Mapping[str, str] = attrs.field(factory=dict)


def read_docstring(text: str) -> ToolDoc:
    """The description without parameter sections, and the parameters' descriptions."""
    lines = text.splitlines()
    style, kept = _without_parameter_sections(lines)
    if style is None:
        return ToolDoc(description=text.strip())
    description = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return ToolDoc(description=description, parameters=_parameter_descriptions(text, style))


def _indent(line: str) -> int:
    """How far a line is indented."""
    return len(line) - len(line.lstrip())


def _without_parameter_sections(lines: list[str]) -> tuple[Style | None, list[str]]:
    """The docstring's style (None: no parameter section) and its lines without those sections."""
    kept: list[str] = []
    style: Style | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if _GOOGLE.fullmatch(stripped):
            style, index = "google", _section_end(lines, index, _indent(line))
        elif (
            _NUMPY.fullmatch(stripped)
            and index + 1 < len(lines)
            and _DASHES.fullmatch(lines[index + 1].strip())
        ):
            style, index = "numpy", _numpy_section_end(lines, index + 2)
        elif _SPHINX.match(stripped):
            style, index = "sphinx", _section_end(lines, index, _indent(line))
        else:
            kept.append(line)
            index += 1
    return style, kept


def _section_end(lines: list[str], start: int, indent: int) -> int:
    """The line after a header (or field) and the lines indented under it."""
    index = start + 1
    while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > indent):
        index += 1
    return index


def _numpy_section_end(lines: list[str], start: int) -> int:
    """The next NumPy section's title line (a line over dashes), or the end."""
    index = start
    while index < len(lines):
        over_dashes = index + 1 < len(lines) and _DASHES.fullmatch(lines[index + 1].strip())
        if lines[index].strip() and over_dashes:
            return index
        index += 1
    return index


def _parameter_descriptions(text: str, style: Style) -> dict[str, str]:
    """Each documented parameter's description, as griffe reads the docstring's style."""
    import griffe  # noqa: PLC0415 - only for docstrings with a parameter section (see above)

    sections = griffe.Docstring(text, lineno=1, parser=style).parse(warnings=False)
    found: dict[str, str] = {}
    for section in sections:
        if section.kind in (
            griffe.DocstringSectionKind.parameters,
            griffe.DocstringSectionKind.other_parameters,
        ):
            for parameter in section.value:
                if parameter.description:
                    found.setdefault(parameter.name, _unwrapped(parameter.description))
    return found


def _unwrapped(description: str) -> str:
    """A description's wrapped lines joined (its paragraphs kept apart)."""
    return re.sub(r"(?<!\n)\n(?!\n)", " ", description)
