"""Models that need no script: `FunctionModel(fn)` and `TestModel()`, ordinary model ports.

    model = FunctionModel(lambda messages, info: ToolCalls([call("add", a=1, b=2)])
                          if len(messages) == 1 else "3")
    model = TestModel()                        # calls every tool once, then answers
    model = TestModel(args={"add": {"a": 1}}, text="done", seed=3)

Both answer `stream(request)` with core model events, so they go wherever a
model port goes: `Client(options, model=...)`, `run`, `execute_agent(...,
model=...)`, `toolreel.testing.override(model=...)`, journals and replay. A
session whose options name no model asks for (and journals) the port's own
name: "test" or "function", not the provider's default model.

`FunctionModel`'s function gets the conversation (`request.messages`:
`ChatMessage`s) and a `ModelInfo` (the tools as `ToolSpec`s, the agent's
output tool, the whole request) and returns a `str` (text), a `Call`
(`call("add", a=1)`), `ToolCalls([...], text=...)`, or a list of those
pieces; sync or async, or a (sync or async) generator of pieces, each
streamed as it comes. (`toolreel.adapters.EventModel(handler)` is the
lower level: its handler returns the core events themselves.)

`TestModel` reads the offered tools' JSON Schemas. In a turn's first call it
calls every tool (or those named in `call_tools`) once, in one round, with
arguments generated from its schema (`_generate.py`; `args` pins some);
then it answers `text`, or the tools' results as JSON (`{"add": 3}`). In an
agent run (execute_agent names its output tool) it calls the helpers once,
then the output tool with a generated output (or `output`), then `submit`
when the agent offers it. The same seed and conversation give the same calls.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

import attrs

from toolreel.core import (
    ChatMessage,
    ConfigError,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    ReflectiveOutput,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolSpec,
    Usage,
    UsageError,
)
from toolreel.core.record import Value

from .._connection import AGENT_OUTPUT_TOOL
from ._generate import Unsatisfiable, valid_value


def _arguments_text(value: Mapping[str, Any] | str) -> str:
    """Arguments as the JSON text a model sends (a str is taken as that text already)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Call(Value):
    """One tool call a function model makes; `arguments` is JSON text (a dict is dumped)."""

    name: str
    arguments: str = attrs.field(default="{}", converter=_arguments_text)
    id: str | None = None


def call(name: str, /, **arguments: Any) -> Call:
    """A call of tool `name` with these keyword arguments: `call("add", a=1, b=2)`."""
    return Call(name=name, arguments=arguments)


def _calls(value: Iterable[Call]) -> tuple[Call, ...]:
    """The calls as a tuple."""
    return tuple(value)


@attrs.frozen(repr=False, eq=False)
class ToolCalls(Value):
    """A response of tool calls (one round, run in parallel), with text before them if any."""

    calls: tuple[Call, ...] = attrs.field(converter=_calls)
    text: str = attrs.field(default="", kw_only=True)


#: What a function model's function may return (or yield, piece by piece).
Piece: TypeAlias = str | Call | ToolCalls
Answer: TypeAlias = Piece | Sequence[Piece]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelInfo(Value):
    """What a function model is told beside the messages.

    `tools` are the tools it may call (an agent's helpers); `output_tools` the
    agent's output tool, then `submit` when the agent offers it (empty outside
    an agent run); `request` the whole request (system prompt, tool_choice, ...).
    """

    request: ModelRequest
    tools: tuple[ToolSpec, ...]
    output_tools: tuple[ToolSpec, ...] = ()

    @classmethod
    def of(cls, request: ModelRequest) -> ModelInfo:
        """Split the offered tools into the callable ones and the agent's output tools."""
        output = AGENT_OUTPUT_TOOL.get()
        names = {spec.name for spec in request.tools}
        if output not in names:
            return cls(request=request, tools=request.tools)
        ending = {output, ReflectiveOutput.submit.name}
        return cls(
            request=request,
            tools=tuple(spec for spec in request.tools if spec.name not in ending),
            output_tools=tuple(spec for spec in request.tools if spec.name in ending),
        )


class FunctionModel:
    """A model played by `function(messages, info)`: see the module docstring."""

    #: The model a session over it asks for and journals, when its options name none.
    model_name = "function"

    def __init__(self, function: Callable[[tuple[ChatMessage, ...], ModelInfo], Any]) -> None:
        """Wrap `function`; every request it answers is kept in `requests`."""
        if not callable(function):
            raise ConfigError("function", function, "a function (messages, info) -> reply")
        self.function = function
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The function's reply to `request` as model events, streamed piece by piece."""
        self.requests.append(request)
        produced = self.function(request.messages, ModelInfo.of(request))
        if inspect.isawaitable(produced):
            produced = await produced
        events = _Events(request)
        if inspect.isasyncgen(produced):
            async for piece in produced:
                for event in events.piece(piece):
                    yield event
        elif inspect.isgenerator(produced):
            for piece in produced:
                for event in events.piece(piece):
                    yield event
        else:
            for piece in _pieces(produced):
                for event in events.piece(piece):
                    yield event
        yield events.end()

    async def aclose(self) -> None:
        """Nothing to release: a function holds no connection."""


def _pieces(produced: object) -> list[Any]:
    """A whole answer as its pieces (a list given is already pieces)."""
    if isinstance(produced, list | tuple):
        return list(produced)
    return [produced]


class _Events:
    """Turns a function's pieces into model events, numbering the calls as they come."""

    def __init__(self, request: ModelRequest) -> None:
        """Start numbering after the calls the conversation already holds (ids stay unique)."""
        self.earlier = sum(
            len(round_.tool_calls) for message in request.messages for round_ in message.tool_rounds
        )
        self.request = request
        self.calls = 0
        self.words = 0

    def piece(self, piece: object) -> list[ModelEvent]:
        """The events of one piece; anything but a piece is a UsageError saying what is."""
        if isinstance(piece, str):
            self.words += len(piece.split())
            return [TextDelta(text=piece)] if piece else []
        if isinstance(piece, Call):
            return self.call(piece)
        if isinstance(piece, ToolCalls):
            events = self.piece(piece.text)
            for one in piece.calls:
                events += self.piece(one)
            return events
        raise UsageError(
            f"FunctionModel's function gave a {type(piece).__name__} ({piece!r:.60}): "
            "return (or yield) a str, call(name, **arguments), ToolCalls([...]), or a list of them"
        )

    def call(self, made: Call) -> list[ModelEvent]:
        """A call's start and its arguments."""
        index, self.calls = self.calls, self.calls + 1
        call_id = made.id or f"call_{self.earlier + index + 1}"
        return [
            ToolCallStarted(index=index, call_id=call_id, name=made.name),
            ToolCallArgumentsDelta(index=index, fragment=made.arguments),
        ]

    def end(self) -> ModelResponded:
        """The response's end; usage counts words, as a rough stand-in for tokens."""
        asked = sum(len(message.content.split()) for message in self.request.messages)
        usage = Usage(input_tokens=asked, output_tokens=self.words + self.calls)
        return ModelResponded(finish_reason="tool_calls" if self.calls else "stop", usage=usage)


class TestModel(FunctionModel):
    """A model that calls every offered tool once with valid arguments, then answers.

    See the module docstring. `call_tools` is "all" or the names of the tools
    to call; `args` pins arguments per tool (`{"add": {"a": 1}}`, the rest
    generated); `text` is the final answer (default: the results as JSON);
    `output` the agent's output (default: generated from its schema). A
    schema no value can be generated for is a UsageError naming the tool and keyword.
    """

    __test__ = False  # not a test class, for pytest
    model_name = "test"

    def __init__(
        self,
        *,
        seed: int = 0,
        call_tools: Literal["all"] | Sequence[str] = "all",
        args: Mapping[str, Mapping[str, Any]] | None = None,
        text: str | None = None,
        output: Mapping[str, Any] | None = None,
    ) -> None:
        """Check what it is given; nothing is generated until a request comes."""
        if call_tools != "all" and (
            isinstance(call_tools, str) or not all(isinstance(n, str) for n in call_tools)
        ):
            raise ConfigError("call_tools", call_tools, '"all" or a list of tool names')
        if args is not None and not all(isinstance(v, Mapping) for v in args.values()):
            raise ConfigError("args", args, "a dict of tool name -> dict of arguments")
        super().__init__(self.respond)
        self.seed = seed
        self.call_tools = call_tools
        self.args = dict(args or {})
        self.text = text
        self.output = output

    def respond(self, messages: tuple[ChatMessage, ...], info: ModelInfo) -> Answer:
        """This call's answer: the tools' round first, then the agent's output, then text."""
        rounds = messages[-1].tool_rounds if messages and messages[-1].role == "assistant" else ()
        called = {made.name for round_ in rounds for made in round_.tool_calls}
        wanted = [spec for spec in info.tools if self._wanted(spec.name, info.request)]
        if wanted and not called & {spec.name for spec in wanted}:
            return ToolCalls(self._call(spec, len(messages)) for spec in wanted)
        if info.output_tools:
            return self._finish(info.output_tools, called, len(messages))
        if self.text is not None:
            return self.text
        results = {result.name: _loaded(result.content) for r in rounds for result in r.results}
        return json.dumps(results, sort_keys=True, ensure_ascii=False)

    def _wanted(self, name: str, request: ModelRequest) -> bool:
        """Whether to call tool `name`: named in `call_tools`, and not ruled out by tool_choice."""
        if request.tool_choice == "none":
            return False
        if request.tool_choice not in ("auto", "required") and request.tool_choice != name:
            return False
        return self.call_tools == "all" or name in self.call_tools

    def _call(self, spec: ToolSpec, turn: int) -> Call:
        """A call of `spec` with generated arguments, the pinned ones laid over them."""
        pinned = dict(self.args.get(spec.name, {}))
        try:
            schema = _without(json.loads(spec.parameters), pinned)
        except ValueError as exc:
            raise UsageError(f"tool {spec.name!r} has parameters that are not JSON: {exc}") from exc
        try:
            made = valid_value(schema, f"{self.seed}:{spec.name}:{turn}")
        except Unsatisfiable as exc:
            raise UsageError(
                f"TestModel cannot generate arguments for tool {spec.name!r}: {exc} "
                f"(keyword {exc.keyword!r}); pin them: TestModel(args={{{spec.name!r}: {{...}}}})"
            ) from exc
        arguments = {**made, **pinned} if isinstance(made, dict) else pinned
        return call(spec.name, **arguments)

    def _finish(self, tools: tuple[ToolSpec, ...], called: set[str], turn: int) -> Call:
        """The output tool's call (given or generated), then `submit` if the agent offers it."""
        output, *submit = tools
        if output.name in called and submit:
            return call(submit[0].name)
        if self.output is not None:
            return Call(name=output.name, arguments=self.output)
        return self._call(output, turn)


def _without(schema: Any, pinned: Mapping[str, Any]) -> Any:
    """The object schema without the pinned properties (they are not generated, nor checked)."""
    if not pinned or not isinstance(schema, dict):
        return schema
    properties = {k: v for k, v in schema.get("properties", {}).items() if k not in pinned}
    required = [name for name in schema.get("required", ()) if name not in pinned]
    return {**schema, "properties": properties, "required": required}


def _loaded(content: str) -> Any:
    """A tool's output as JSON when it is JSON, else the text."""
    try:
        return json.loads(content)
    except ValueError:
        return content
