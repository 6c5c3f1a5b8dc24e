"""Masking keys and their echoes; cleaning keys where they enter (adapters/_redact.py)."""

from __future__ import annotations

import itertools
import logging
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreel.adapters import Secret, api_key, codec_for
from toolreel.adapters._redact import HTTP_LOGGERS, RedactingFilter
from toolreel.adapters.redaction import Redactor, clean_key
from toolreel.core import (
    ConfigError,
    HookDecided,
    ModelCallFailed,
    ModelResponded,
    TextDelta,
    ToolFinished,
    Usage,
)
from toolreel.core.hooks import Blocked

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
        (f"its end ...{KEY[-8:]}", "its end ...***"),
        (f"its middle [{KEY[5:13]}]", "its middle [***]"),
        (f"two pieces {KEY[3:11]} and {KEY[12:]}", "two pieces *** and ***"),
        (f"{KEY[:7]} is too short an echo to tell", f"{KEY[:7]} is too short an echo to tell"),
        (f"nor is ...{KEY[-7:]}", f"nor is ...{KEY[-7:]}"),
        ("nothing here", "nothing here"),
    ],
)
def test_the_key_and_every_run_of_eight_of_its_characters_or_more_are_masked(
    text: str, masked: str
) -> None:
    assert REDACTOR.text(text) == masked


def test_a_key_of_exactly_the_minimum_length_is_a_secret_and_one_shorter_is_not() -> None:
    assert (
        Redactor.of(["k3y-0123"]).text("sent k3y-0123 twice: k3y-0123.") == "sent *** twice: ***."
    )
    assert Redactor.of(["k3y-012"]).secrets == ()


@pytest.mark.parametrize(
    ("key", "public"),
    [
        ("sk-proj-Zq8vN3xR7tLw2Yp5Kd9Hs4Bm6Jc1Fg0", "sk-proj-"),
        ("sk-ant-api03-Zq8vN3xR7tLw2Yp5Kd9Hs4Bm6Jc1Fg0", "sk-ant-api03-"),
        ("sk-svcacct-Zq8vN3xR7tLw2Yp5Kd9Hs4Bm6Jc1Fg0", "sk-svcacct-"),
    ],
)
def test_a_public_prefix_alone_is_left_and_one_more_character_of_the_key_is_not(
    key: str, public: str
) -> None:
    redactor = Redactor.of([key])
    said = f"keys look like {public}... ({public}xyz)"
    assert redactor.text(said) == said
    assert redactor.text(f"yours is {key[: len(public) + 1]}.") == "yours is ***."
    assert redactor.text(f"{key[len(public) - 7 : len(public) + 1]}") == "***"


def reference_masked(text: str, key: str, public: int) -> set[int]:
    """The characters a slow, obvious reading of the rule masks: those of any run of 8 or more
    characters of `key` that goes past its first `public` characters."""
    covered: set[int] = set()
    for start in range(len(text)):
        for end in range(start + 8, len(text) + 1):
            piece = text[start:end]
            if any(
                p + len(piece) > public
                for p in (m.start() for m in re.finditer(f"(?={re.escape(piece)})", key))
            ):
                covered.update(range(start, end))
    return covered


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.one_of(
            st.text(alphabet="ab sk-proj9Z", max_size=6),
            st.tuples(st.integers(0, 30), st.integers(0, 14)),
        ),
        max_size=6,
    )
)
def test_masks_cover_exactly_the_runs_of_eight_or_more_characters_of_the_key(
    parts: list[str | tuple[int, int]],
) -> None:
    key = "sk-proj-Zq8vN3xR7tLw2Yp5Kd9Hs4Bm"
    text = "".join(p if isinstance(p, str) else key[p[0] : p[0] + p[1]] for p in parts)
    spans = Redactor.of([key]).spans(text)
    assert {i for start, end in spans for i in range(start, end)} == reference_masked(
        text, key, len("sk-proj-")
    )
    assert all(end <= start_next for (_, end), (start_next, _) in itertools.pairwise(spans))


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


def test_the_log_filter_covers_the_http_clients_loggers_once_a_key_is_known(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log_filter = RedactingFilter(("toolreel-test-http",))
    child = logging.getLogger("toolreel-test-http.http11")
    assert log_filter not in child.filters  # no key known: not installed, nothing to pay
    log_filter.add(REDACTOR)
    assert (
        log_filter in child.filters
        and log_filter in logging.getLogger("toolreel-test-http").filters
    )
    caplog.set_level(logging.DEBUG)
    child.debug("headers [(b'x-echo', b'...%s')]", KEY[-10:])
    assert caplog.messages == ["headers [(b'x-echo', b'...***')]"]
    assert {"httpx", "httpx2", "httpcore.http11", "httpcore2.http11"} <= set(HTTP_LOGGERS)
