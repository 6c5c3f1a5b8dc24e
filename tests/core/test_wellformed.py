"""Well-formed text and events (core/_text.py, core/_wellformed.py): what the caller gives is
refused, what a model, a tool or a hook sends is kept as a journal can write it exactly."""

from __future__ import annotations

import math

import orjson
import pytest

from toolreel.adapters.records import event_data, event_of
from toolreel.core import (
    ConfigError,
    Denied,
    HookDecided,
    ImagePart,
    LoopConfig,
    ModelCallFailed,
    ModelResponded,
    PlainOutput,
    PromptSubmitted,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolSpec,
    Usage,
    ValidationFinished,
    arguments_object,
    well_formed,
)
from toolreel.core._text import surrogate_at, valid_text
from toolreel.core.hooks import Blocked

#: What `"\ud800"` in JSON, or an undecodable byte read with surrogateescape, leave in a str.
LONE, ESCAPED_BYTE = "\ud800", b"\xff".decode("utf-8", "surrogateescape")


def journaled(event: object) -> object:
    """`event` written as a journal writes it (orjson) and read back."""
    return event_of(orjson.loads(orjson.dumps(event_data(event))))  # type: ignore[arg-type]


def test_a_lone_surrogate_is_replaced_by_the_replacement_character() -> None:
    assert valid_text(f"a{LONE}b{ESCAPED_BYTE}") == "a\ufffdb\ufffd"


def test_a_pair_held_as_two_code_points_becomes_its_character() -> None:
    assert valid_text("\ud83d\ude00 and \ude00\ud83d") == "\U0001f600 and \ufffd\ufffd"


@pytest.mark.parametrize("text", ["plain", "héllo wörld", "你好", "\U0001f600"])
def test_valid_text_is_the_same_object(text: str) -> None:
    assert valid_text(text) is text
    assert surrogate_at(text) is None


def test_where_the_first_surrogate_is() -> None:
    assert surrogate_at(f"abc{ESCAPED_BYTE}{LONE}") == 3


@pytest.mark.parametrize(
    "event",
    [
        TextDelta(text=f"bad {LONE} text"),
        ReasoningDelta(text=LONE, signature=ESCAPED_BYTE),
        ToolCallStarted(index=0, call_id=f"call_{LONE}", name=f"add{LONE}"),
        ToolCallArgumentsDelta(index=0, fragment=f'{{"a": "{LONE}'),
        ModelCallFailed(retryable=True, message=f"server said {ESCAPED_BYTE}"),
        ToolFinished(call_id="c1", output=f"read {ESCAPED_BYTE} from a file"),
        HookDecided(hook_id="pre:c1", decision=Blocked(reason=f"no {LONE}")),
        ValidationFinished(attempt=1, problems=(f"$.name: {LONE}",)),
    ],
    ids=lambda event: type(event).__name__,
)
def test_what_a_model_a_tool_or_a_hook_sends_is_made_writable_and_reads_back_equal(
    event: object,
) -> None:
    with pytest.raises(TypeError, match="surrogates not allowed"):
        orjson.dumps(event_data(event))  # type: ignore[arg-type]
    formed = well_formed(event)
    assert "\ufffd" in repr(formed)
    assert journaled(formed) == formed


def test_numbers_past_what_json_holds_are_brought_into_range() -> None:
    huge = ModelResponded(usage=Usage(input_tokens=10**30, extra=(("cache", -(10**30)),)))
    formed = well_formed(huge)
    assert formed.usage == Usage(input_tokens=2**64 - 1, extra=(("cache", -(2**63)),))
    assert journaled(formed) == formed
    endless = ModelCallFailed(retryable=True, message="wait", retry_after=math.inf)
    assert well_formed(endless) == ModelCallFailed(retryable=True, message="wait")
    far = ToolCallArgumentsDelta(index=2**70, fragment="{}")
    assert well_formed(far) == ToolCallArgumentsDelta(index=2**64 - 1, fragment="{}")


@pytest.mark.parametrize(
    "event",
    [
        TextDelta(text="plain"),
        TextDelta(text="héllo"),
        ToolCallArgumentsDelta(index=0, fragment='{"a": 1}'),
        ModelResponded(usage=Usage(input_tokens=3, extra=(("cache", 1),))),
        ToolFinished(call_id="c1", output="ok", images=(ImagePart.of(b"GIF89a..."),)),
        PromptSubmitted(text="hi"),
    ],
    ids=lambda event: type(event).__name__,
)
def test_a_well_formed_event_is_the_same_object(event: object) -> None:
    assert well_formed(event) is event


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda text: PromptSubmitted(text=text), "prompt"),
        (lambda text: Denied(call_id="c1", reason=text), "reason"),
        (lambda text: LoopConfig(model="m", system_prompt=text), "system_prompt"),
        (
            lambda text: LoopConfig(
                output=PlainOutput(tool=ToolSpec(name="out")), system_prompt=text
            ),
            "system_prompt",
        ),
        (lambda text: ToolSpec(name="add", description=text), "description"),
        (lambda text: ToolSpec(name=text), "name"),
        (lambda text: ImagePart(media_type="image/png", url=f"https://x.test/{text}"), "url"),
    ],
)
def test_text_from_the_caller_with_a_lone_surrogate_is_refused(make: object, field: str) -> None:
    with pytest.raises(ConfigError, match=f"^{field}=") as refused:
        make(f"say {ESCAPED_BYTE} now")  # type: ignore[operator]
    assert refused.value.field == field


def test_the_refusal_says_where_and_shows_the_text_around_it() -> None:
    prompt = "x" * 100 + ESCAPED_BYTE + "y" * 100
    with pytest.raises(ConfigError) as refused:
        PromptSubmitted(text=prompt)
    message = str(refused.value)
    assert "'\\udcff' at character 100" in message
    assert "errors='replace'" in message
    assert len(message) < 400  # the text around it, not the whole prompt


@pytest.mark.parametrize("prompt", [None, 123, b"bytes"])
def test_a_prompt_that_is_no_str_is_refused(prompt: object) -> None:
    with pytest.raises(ConfigError, match=r"^prompt=.* a str$"):
        PromptSubmitted(text=prompt)  # type: ignore[arg-type]


def test_arguments_escaping_half_a_pair_read_with_the_replacement_character() -> None:
    arguments = '{"path": "\\ud800 x", "\\udcff": ["\\ud83d\\ude00"]}'
    assert arguments_object(arguments) == {"path": "\ufffd x", "\ufffd": ["\U0001f600"]}
