"""Masking keys and their echoes; cleaning keys where they enter (adapters/_redact.py)."""

from __future__ import annotations

import logging

import pytest

from toolreel.adapters import Secret, api_key, codec_for
from toolreel.adapters._redact import RedactingFilter, Redactor, clean_key
from toolreel.core import (
    Blocked,
    ConfigError,
    HookDecided,
    ModelCallFailed,
    ModelResponded,
    TextDelta,
    ToolFinished,
    Usage,
)

KEY = "sk-abc123def456ghi789"
REDACTOR = Redactor.of([KEY + "\n"])


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (f"key {KEY}!", "key ***!"),
        (f"Bearer {KEY}\n", "Bearer ***\n"),
        (f"seen as {KEY[:12]}***", "seen as ******"),
        (f"seen as {KEY[:15]}...{KEY[-4:]}", "seen as ***...i789"),
        (f"{KEY}{KEY}", "******"),
        (f"{KEY[:11]} is too short an echo to tell", f"{KEY[:11]} is too short an echo to tell"),
        ("nothing here", "nothing here"),
    ],
)
def test_the_key_and_every_echo_of_twelve_characters_or_more_are_masked(
    text: str, masked: str
) -> None:
    assert REDACTOR.text(text) == masked


def test_placeholders_too_short_to_be_keys_are_left_alone() -> None:
    assert Redactor.of(["ollama", None, "", "x"]).secrets == ()
    assert Redactor.of(["ollama"]).text("ollama says hi") == "ollama says hi"


def test_events_are_masked_field_by_field_and_untouched_ones_are_the_same_object() -> None:
    clean = TextDelta(text="hello")
    assert REDACTOR.event(clean) is clean
    responded = ModelResponded(usage=Usage(input_tokens=1, extra=(("cached_tokens", 1),)))
    assert REDACTOR.event(responded) is responded
    assert REDACTOR.event(TextDelta(text=KEY)) == TextDelta(text="***")
    failed = ModelCallFailed(retryable=True, message=f"HTTP 401: {KEY}", status=401)
    assert REDACTOR.event(failed) == ModelCallFailed(
        retryable=True, message="HTTP 401: ***", status=401
    )
    assert REDACTOR.event(ToolFinished(call_id="c", output=f"[{KEY}]")).output == "[***]"
    decided = HookDecided(hook_id="h", decision=Blocked(reason=f"no {KEY}"))
    assert REDACTOR.event(decided) == HookDecided(hook_id="h", decision=Blocked(reason="no ***"))


def test_redactors_merge_and_never_show_their_secrets() -> None:
    other = Redactor.of(["sk-zzzzzzzzzzzzzzzz"])
    both = REDACTOR | other
    assert both.text(f"{KEY} sk-zzzzzzzzzzzzzzzz") == "*** ***"
    assert KEY not in repr(both) and "zzzz" not in repr(both)


def test_keys_are_stripped_where_they_enter() -> None:
    assert clean_key(f"  {KEY}\r\n") == KEY
    assert clean_key("\n") is None
    assert Secret(KEY + "\n").value == KEY
    environ = {"OPENAI_API_KEY": KEY + "\n"}
    assert api_key(codec_for("openai"), None, environ) == Secret(KEY)


@pytest.mark.parametrize("mangled", ["sk-abc 123", "sk-abc\t123", "sk-abc\x1b123", "sk-abcé123"])
def test_a_key_with_whitespace_or_control_characters_inside_is_refused_unshown(
    mangled: str,
) -> None:
    with pytest.raises(ConfigError) as refused:
        clean_key(mangled)
    assert (refused.value.field, refused.value.value) == ("api_key", "***")
    assert "abc" not in str(refused.value)
    with pytest.raises(ConfigError, match="from OPENAI_API_KEY"):
        api_key(codec_for("openai"), None, {"OPENAI_API_KEY": mangled})


def test_the_log_filter_masks_message_arguments_and_tracebacks() -> None:
    log_filter = RedactingFilter()
    log_filter.add(REDACTOR)
    try:
        raise RuntimeError(KEY)
    except RuntimeError as exc:
        record = logging.LogRecord(
            "toolreel", logging.ERROR, __file__, 1, "got %s", (KEY,), (type(exc), exc, None)
        )
    assert log_filter.filter(record)
    assert record.getMessage() == "got ***"
    assert record.exc_text is not None and KEY not in record.exc_text
