"""Tool calls written as text become calls (adapters/_providers/_recovery.py), in every chunking.

Each stream is cut into two pieces at every position and into one-character
pieces; whatever the cut, the same text and the same calls come out, and the
text let out so far is always a prefix of the final text (nothing is dropped,
reordered, or let out and then taken back).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from toolreel.adapters import AnthropicCodec, OllamaCodec, OpenAICodec
from toolreel.adapters._providers._recovery import Recovery, ToolCallRecovery, recovery_for
from toolreel.adapters._providers._recovery import with_recovery as recovering
from toolreel.core import (
    ConfigError,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolSpec,
)
from toolreel.core._arguments import arguments_error

TOOLS = frozenset({"get_weather", "add"})
Calls = list[tuple[str, str]]

WEATHER = {"name": "get_weather", "arguments": {"city": "Paris"}}
WEATHER_ARGS = '{"city": "Paris"}'
ADD_ARGS = '{"a": 2, "b": 3}'


def chunkings(text: str) -> Iterator[list[str]]:
    """The text whole, cut in two at every position, and cut into single characters."""
    yield [text]
    for cut in range(1, len(text)):
        yield [text[:cut], text[cut:]]
    yield list(text)


def fold(events: list[ModelEvent]) -> tuple[str, Calls]:
    """The text and the (name, arguments) calls the events add up to, in index order."""
    text = ""
    names: dict[int, str] = {}
    arguments: dict[int, str] = {}
    for event in events:
        if isinstance(event, TextDelta):
            text += event.text
        elif isinstance(event, ToolCallStarted):
            assert event.index not in names, "an index is started once"
            names[event.index] = event.name
        elif isinstance(event, ToolCallArgumentsDelta):
            arguments[event.index] = arguments.get(event.index, "") + event.fragment
    return text, [(names[index], arguments.get(index, "")) for index in sorted(names)]


def recover(mode: ToolCallRecovery, pieces: list[str]) -> tuple[str, Calls]:
    """Feed the pieces as text deltas, then the end; the terminal event stays last; fold."""
    recovery = Recovery(mode, TOOLS)
    events: list[ModelEvent] = []
    for piece in pieces:
        events += recovery([TextDelta(text=piece)])
    events += recovery([ModelResponded()])
    assert events[-1] == ModelResponded()
    assert not any(isinstance(event, ModelResponded) for event in events[:-1])
    return fold(events)


def assert_every_chunking(mode: ToolCallRecovery, stream: str, text: str, calls: Calls) -> None:
    """Every chunking of `stream` gives `text` and `calls`; let-out text only grows as a prefix."""
    for pieces in chunkings(stream):
        got_text, got_calls = recover(mode, pieces)
        assert (got_text, got_calls) == (text, calls), pieces
        prefix = ""
        recovery = Recovery(mode, TOOLS)
        for piece in pieces:
            prefix += fold(recovery([TextDelta(text=piece)]))[0]
            assert text.startswith(prefix), (pieces, prefix)


def hermes(call: dict[str, object]) -> str:
    """One Hermes/Qwen call block, as Qwen writes it."""
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


# --- each format, in every chunking ------------------------------------------------------------

FORMATS = [
    pytest.param(
        ["hermes", "auto"],
        "Let me look.\n" + hermes(WEATHER),
        "Let me look.\n",
        [("get_weather", WEATHER_ARGS)],
        id="hermes-one-call-after-text",
    ),
    pytest.param(
        ["hermes", "auto"],
        "A " + hermes(WEATHER) + "\n"
        '<tool_call>{"name": "add", "arguments": "{\\"a\\": 2, \\"b\\": 3}"}</tool_call> done',
        "A \n done",
        [("get_weather", WEATHER_ARGS), ("add", ADD_ARGS)],
        id="hermes-two-calls-text-between-and-after-string-arguments",
    ),
    pytest.param(
        ["hermes", "auto"],
        '<tool_call>[{"name": "add", "arguments": {"a": 2, "b": 3}}, '
        '{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>',
        "",
        [("add", ADD_ARGS), ("get_weather", WEATHER_ARGS)],
        id="hermes-a-list-in-one-block",
    ),
    pytest.param(
        ["llama3", "auto"],
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
        "",
        [("get_weather", WEATHER_ARGS)],
        id="llama3-python-tag",
    ),
    pytest.param(
        ["llama3", "auto"],
        'Sure. <|python_tag|>{"name": "add", "parameters": {"a": 2, "b": 3}}; '
        '{"name": "get_weather", "parameters": {"city": "Paris"}}',
        "Sure. ",
        [("add", ADD_ARGS), ("get_weather", WEATHER_ARGS)],
        id="llama3-python-tag-two-calls",
    ),
    pytest.param(
        ["llama3", "auto"],
        '\n {"name": "get_weather", "parameters": {"city": "Paris"}}\n',
        "",
        [("get_weather", WEATHER_ARGS)],
        id="llama3-bare-json-answer",
    ),
    pytest.param(
        ["llama3", "auto"],
        '{"type": "function", "name": "add", "parameters": {"a": 2, "b": 3}}',
        "",
        [("add", ADD_ARGS)],
        id="llama3-bare-json-with-type",
    ),
    pytest.param(
        ["llama3", "auto"],
        '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        "",
        [("get_weather", WEATHER_ARGS)],
        id="bare-json-in-a-markdown-fence",
    ),
    pytest.param(
        ["mistral", "auto"],
        '[TOOL_CALLS][{"name": "add", "arguments": {"a": 2, "b": 3}}, '
        '{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcDEF123"}]',
        "",
        [("add", ADD_ARGS), ("get_weather", WEATHER_ARGS)],
        id="mistral-list",
    ),
    pytest.param(
        ["mistral", "auto"],
        'ok [TOOL_CALLS]add[ARGS]{"a": 2, "b": 3}[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
        "ok ",
        [("add", ADD_ARGS), ("get_weather", WEATHER_ARGS)],
        id="mistral-name-args",
    ),
]


@pytest.mark.parametrize(("modes", "stream", "text", "calls"), FORMATS)
def test_each_format_gives_its_calls_and_text_in_every_chunking(
    modes: list[ToolCallRecovery], stream: str, text: str, calls: Calls
) -> None:
    for mode in modes:
        assert_every_chunking(mode, stream, text, calls)


# --- false alarms: text stays text, in order ---------------------------------------------------

FALSE_ALARMS = [
    pytest.param("Use <tool> or <tool_cal or <|python or [TOOL_ here.", id="marker-prefixes"),
    pytest.param("Qwen writes <tool_call> tags around calls.", id="marker-then-prose"),
    pytest.param('<tool_call>{"city": "Paris"}</tool_call> ok', id="block-without-a-call"),
    pytest.param('{"name": "Paris", "population": 2100000}', id="json-answer"),
    pytest.param('{"name": "launch", "parameters": {}}', id="bare-json-unoffered-tool"),
    pytest.param('{"name": "add", "parameters": {}} and more', id="bare-json-then-text"),
    pytest.param("<|python_tag|>print(2 + 3)", id="python-tag-code"),
    pytest.param("[TOOL_CALLS] is Mistral's marker", id="mistral-marker-then-prose"),
    pytest.param("the end <tool_ca", id="ends-inside-a-marker"),
    pytest.param("   \n", id="only-whitespace"),
    pytest.param("```python\nprint(2 + 3)\n```", id="fenced-code"),
    pytest.param('```json\n{"name": "Paris"}\n```', id="fenced-json-answer"),
    pytest.param("`` is not a fence", id="backticks"),
]


@pytest.mark.parametrize("stream", FALSE_ALARMS)
def test_text_that_is_not_a_call_is_let_out_unchanged_in_every_chunking(stream: str) -> None:
    assert_every_chunking("auto", stream, stream, [])


@pytest.mark.parametrize(
    ("mode", "stream"),
    [
        ("hermes", '[TOOL_CALLS][{"name": "add", "arguments": {}}]'),
        ("hermes", '{"name": "add", "parameters": {}}'),
        ("hermes", '<|python_tag|>{"name": "add", "parameters": {}}'),
        ("mistral", hermes(WEATHER)),
        ("llama3", hermes(WEATHER)),
    ],
)
def test_a_mode_recovers_only_its_own_format(mode: ToolCallRecovery, stream: str) -> None:
    assert_every_chunking(mode, stream, stream, [])


def test_a_json_answer_found_to_be_text_is_still_searched_for_markers() -> None:
    stream = '{"answer": 5} then ' + hermes(WEATHER)
    assert_every_chunking("auto", stream, '{"answer": 5} then ', [("get_weather", WEATHER_ARGS)])


# --- broken calls and unknown names --------------------------------------------------------


def test_broken_json_in_a_tag_is_a_call_the_loop_answers_with_the_problem() -> None:
    broken = '{"name": "get_weather", "arguments": {"city": "Paris"}'
    stream = f"<tool_call>{broken}</tool_call>"
    assert_every_chunking("auto", stream, "", [("get_weather", broken)])
    assert arguments_error(broken) is not None  # what the model reads back


def test_a_call_cut_off_by_the_end_of_the_answer_is_a_broken_call() -> None:
    stream = 'Checking. <tool_call>{"name": "get_weather", "argu'
    assert_every_chunking(
        "hermes", stream, "Checking. ", [("get_weather", '{"name": "get_weather", "argu')]
    )


def test_broken_json_without_a_readable_name_is_a_nameless_call() -> None:
    assert_every_chunking("auto", "<|python_tag|>{oops", "", [("", "{oops")])


def test_an_unknown_name_inside_a_marker_becomes_a_call_for_the_loop_to_refuse() -> None:
    stream = '<tool_call>{"name": "launch", "arguments": {}}</tool_call>'
    assert_every_chunking("auto", stream, "", [("launch", "{}")])


def test_arguments_that_are_not_an_object_are_passed_on_for_the_loop_to_refuse() -> None:
    stream = '<tool_call>{"name": "add", "arguments": "two and three"}</tool_call>'
    assert_every_chunking("auto", stream, "", [("add", "two and three")])


# --- streaming: held back only while it may be a call --------------------------------------


def test_text_is_let_out_as_soon_as_it_cannot_start_a_marker() -> None:
    recovery = Recovery("auto", TOOLS)
    assert recovery([TextDelta(text="Hello <tool")]) == [TextDelta(text="Hello ")]
    assert recovery([TextDelta(text="s> and")]) == [TextDelta(text="<tools> and")]
    assert recovery([TextDelta(text=" [TOOL")]) == [TextDelta(text=" ")]
    assert recovery([ModelResponded()]) == [TextDelta(text="[TOOL"), ModelResponded()]


def test_a_marker_followed_by_prose_is_let_out_at_once() -> None:
    recovery = Recovery("auto", TOOLS)
    assert recovery([TextDelta(text="see <tool_call>")]) == [TextDelta(text="see ")]
    assert recovery([TextDelta(text=" t")]) == [TextDelta(text="<tool_call> t")]


def test_a_marker_mentioned_in_thinking_does_not_hide_the_call_after_it() -> None:
    stream = "<think>I will write <tool_call> now.</think>\n" + hermes(WEATHER)
    text = "<think>I will write <tool_call> now.</think>\n"
    assert_every_chunking("auto", stream, text, [("get_weather", WEATHER_ARGS)])


def test_a_call_comes_out_as_soon_as_its_block_closes() -> None:
    recovery = Recovery("hermes", TOOLS)
    assert recovery([TextDelta(text=hermes(WEATHER)[:-3])]) == []
    assert recovery([TextDelta(text=hermes(WEATHER)[-3:] + " ok")]) == [
        ToolCallStarted(index=0, call_id="", name="get_weather"),
        ToolCallArgumentsDelta(index=0, fragment=WEATHER_ARGS),
        TextDelta(text=" ok"),
    ]


def test_reasoning_passes_while_text_is_held() -> None:
    recovery = Recovery("auto", TOOLS)
    thought = ReasoningDelta(text="thinking")
    assert recovery([TextDelta(text="<tool_"), thought]) == [thought]


def test_a_failure_lets_out_what_was_held_as_text_first() -> None:
    recovery = Recovery("auto", TOOLS)
    failed = ModelCallFailed(retryable=True, message="dropped")
    assert recovery([TextDelta(text="a <tool_call>{")]) == [TextDelta(text="a ")]
    assert recovery([failed]) == [TextDelta(text="<tool_call>{"), failed]


def test_server_calls_are_numbered_after_recovered_ones() -> None:
    recovery = Recovery("hermes", TOOLS)
    events = recovery(
        [
            TextDelta(text=hermes(WEATHER)),
            ToolCallStarted(index=0, call_id="c1", name="add"),
            ToolCallArgumentsDelta(index=0, fragment=ADD_ARGS),
            ModelResponded(finish_reason="tool_calls"),
        ]
    )
    assert events == [
        ToolCallStarted(index=0, call_id="", name="get_weather"),
        ToolCallArgumentsDelta(index=0, fragment=WEATHER_ARGS),
        ToolCallStarted(index=1, call_id="c1", name="add"),
        ToolCallArgumentsDelta(index=1, fragment=ADD_ARGS),
        ModelResponded(finish_reason="tool_calls"),
    ]


# --- when recovery applies ---------------------------------------------------------------------


def request(*, tools: tuple[str, ...] = ("add",), tool_choice: str = "auto") -> ModelRequest:
    """A request offering `tools`."""
    specs = tuple(ToolSpec(name=name) for name in tools)
    return ModelRequest(model="m", system="", messages=(), tools=specs, tool_choice=tool_choice)


def test_recovery_is_off_unless_the_codec_asks_and_tools_are_offered() -> None:
    hermes_codec = recovering(OpenAICodec(), "hermes")
    assert recovery_for(OpenAICodec(), request()) is None
    assert recovery_for(hermes_codec, request()) is not None
    assert recovery_for(recovering(OllamaCodec(), "auto"), request()) is not None
    assert recovery_for(hermes_codec, request(tools=())) is None
    assert recovery_for(hermes_codec, request(tool_choice="none")) is None


def test_only_known_modes_and_codecs_that_can_recover_are_accepted() -> None:
    with pytest.raises(ConfigError, match="tool_call_recovery"):
        recovering(OpenAICodec(), "qwen")
    with pytest.raises(ConfigError, match="openai, ollama"):
        recovering(AnthropicCodec(), "auto")


# --- through the codecs' own decoders, the wire bytes cut at every byte ----------------------

SPOKEN = "Checking. " + hermes(WEATHER) + " Done."


def openai_stream(content: str, size: int = 7) -> bytes:
    """A chat.completions SSE stream that sends `content` as text, `size` characters a chunk."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": content[i : i + size]}}]}
        for i in range(0, len(content), size)
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    frames = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    return ("".join(frames) + "data: [DONE]\n\n").encode()


def ollama_stream(content: str, size: int = 7) -> bytes:
    """An /api/chat NDJSON stream that sends `content` as text, `size` characters a line."""
    lines = [
        {"message": {"role": "assistant", "content": content[i : i + size]}, "done": False}
        for i in range(0, len(content), size)
    ]
    lines.append({"message": {"role": "assistant", "content": ""}, "done": True})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@pytest.mark.parametrize(
    ("codec", "body"),
    [(OpenAICodec(), openai_stream(SPOKEN)), (OllamaCodec(), ollama_stream(SPOKEN))],
    ids=["openai", "ollama"],
)
def test_a_codec_stream_cut_at_every_byte_gives_the_recovered_call(
    codec: OpenAICodec | OllamaCodec, body: bytes
) -> None:
    wanted = ("Checking.  Done.", [("get_weather", WEATHER_ARGS)])
    for cut in range(len(body) + 1):
        decoder, recovery = codec.stream_decoder(), Recovery("auto", TOOLS)
        events = recovery(decoder.feed(body[:cut])) + recovery(decoder.feed(body[cut:]))
        events += recovery(decoder.close())
        assert fold(events) == wanted, cut
        assert isinstance(events[-1], ModelResponded)
