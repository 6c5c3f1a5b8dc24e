"""Retryable or fatal, and how long to wait (adapters/_providers/_failures.py)."""

from __future__ import annotations

import email.utils
import time

import anyio
import pytest

from toolreel.adapters import GeminiCodec, HttpModel, OpenAICodec, Secret, codec_for
from toolreel.adapters._providers._failures import (
    duration,
    http_failure,
    retry_after,
    status_retryable,
)
from toolreel.core import ModelCallFailed, ModelRequest


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retryable(status: int) -> None:
    assert status_retryable(status)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_client_errors_are_fatal(status: int) -> None:
    assert not status_retryable(status)


def test_retry_after_in_seconds_or_milliseconds_any_header_case() -> None:
    assert retry_after({"Retry-After": "7"}) == 7.0
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


def test_retry_after_as_an_http_date_is_the_seconds_from_now() -> None:
    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"}, now=now) == 30.0
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, now=now) == 0.0
    assert retry_after({"retry-after": "Wednesday, 21-Oct-15 07:28:05 GMT"}, now=now) == 5.0


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
def test_every_provider_honours_a_retry_after_date(provider: str) -> None:
    codec = codec_for(provider)
    later = email.utils.formatdate(time.time() + 120, usegmt=True)
    failure = codec.decode_error(503, {"Retry-After": later}, b'{"error": "busy"}')
    assert failure.retryable and failure.retry_after is not None
    assert 100 < failure.retry_after <= 120


def test_protobuf_durations() -> None:
    assert duration("34.4s") == 34.4
    assert duration("soon") is None


def test_http_failure_carries_status_message_and_wait() -> None:
    assert http_failure(429, "slow down", {"retry-after": "3"}) == ModelCallFailed(
        retryable=True, message="HTTP 429: slow down", status=429, retry_after=3.0
    )
    assert http_failure(429, "quota", {}, retryable=False).retryable is False


def test_a_url_no_client_can_use_is_a_fatal_failure_not_a_retry() -> None:
    async def main() -> list:
        model = HttpModel(OpenAICodec(), base_url="ftp://127.0.0.1/v1")
        request = ModelRequest(model="m", system=None, messages=(), tools=())
        events = [event async for event in model.stream(request)]
        await model.aclose()
        return events

    [failure] = anyio.run(main)
    assert isinstance(failure, ModelCallFailed)
    assert failure.retryable is False and "UnsupportedProtocol" in failure.message


def _failure_from(model: HttpModel) -> ModelCallFailed:
    """The one event a call to `model` gives when nothing answers."""

    async def main() -> list:
        request = ModelRequest(model="m", system=None, messages=(), tools=())
        events = [event async for event in model.stream(request)]
        await model.aclose()
        return events

    [failure] = anyio.run(main)
    assert isinstance(failure, ModelCallFailed)
    return failure


def test_a_connection_failure_names_the_url_it_tried() -> None:
    failure = _failure_from(HttpModel(OpenAICodec(), base_url="http://127.0.0.1:9/v1"))
    assert failure.retryable is True and failure.message.startswith("ConnectError: ")
    assert failure.message.endswith("(http://127.0.0.1:9/v1/chat/completions)")


def test_the_url_in_a_connection_failure_holds_no_user_info_query_or_key() -> None:
    model = HttpModel(
        GeminiCodec(), base_url="http://user:hunter2@127.0.0.1:9", api_key=Secret("AIza-key")
    )
    message = _failure_from(model).message
    assert message.endswith("(http://127.0.0.1:9/v1beta/models/m:streamGenerateContent)")
    assert "hunter2" not in message and "alt=sse" not in message and "AIza" not in message


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (
            400,
            "This model's maximum context length is 128000 tokens (code=context_length_exceeded)",
        ),
        (400, "prompt is too long: 210000 tokens > 200000 maximum"),
        (400, "The input token count (1200000) exceeds the maximum number of tokens allowed"),
        (413, "request exceeds the context window"),
    ],
)
def test_a_request_too_long_for_the_context_is_marked(status: int, message: str) -> None:
    assert http_failure(status, message, {}).context_too_long


@pytest.mark.parametrize(("status", "message"), [(400, "bad tool schema"), (500, "context length")])
def test_other_failures_are_not_marked_too_long(status: int, message: str) -> None:
    assert not http_failure(status, message, {}).context_too_long
