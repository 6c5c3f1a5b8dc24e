"""Hostile servers: keep-alives forever, bodies that never end, slow first bytes, resets,
cut streams, Retry-After dates, answers without a choice — through Client/run and HttpModel
against the fault server on 127.0.0.1 (tests/faults/fault_server.py)."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import anyio
import pytest
from fault_server import (
    FaultServer,
    answer,
    keepalive,
    malformed_calls,
    never_close,
    no_choice,
    rate_limited,
    reset,
    slow_first_byte,
    truncate,
)

from toolreel.adapters import HttpModel, OpenAICodec, Timeouts, http_model
from toolreel.core import ConfigError, ModelCallFailed, ModelRequest, ModelResponded, TextDelta
from toolreel.core.notices import RetryScheduled
from toolreel.core.policies import RetryPolicy
from toolreel.shell import AgentOptions, Client, run
from toolreel.shell.errors import RunFailed

NO_RETRY = RetryPolicy(max_retries=0)
FAST_RETRY = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05)
REQUEST = ModelRequest(model="m", system=None, messages=(), tools=())


def options(server: FaultServer, **extra: Any) -> AgentOptions:
    """Options pointing at the fault server, retrying fast unless told otherwise."""
    extra.setdefault("retry", FAST_RETRY)
    return AgentOptions(model="m", base_url=server.url, api_key="sk-test-key-0001", **extra)


def failure_of(opts: AgentOptions) -> str:
    """The message of the run's failure."""
    with pytest.raises(RunFailed) as failed:
        anyio.run(run, "hi", opts)
    return str(failed.value)


async def retries_and_text(opts: AgentOptions) -> tuple[list[RetryScheduled], str]:
    """The retries a turn scheduled, and its final text."""
    async with Client(opts) as client:
        await client.query("hi")
        notices = [notice async for notice in client.events()]
        assert client.last_finish is not None
        return [n for n in notices if isinstance(n, RetryScheduled)], client.last_finish.text


async def call(model: HttpModel) -> list[Any]:
    """The events of one call."""
    return [event async for event in model.stream(REQUEST)]


# --- limits ---------------------------------------------------------------------------------


def test_keepalive_comments_never_reset_the_idle_limit() -> None:
    with FaultServer([keepalive(every=0.02, hold=5), answer("hello")]) as server:
        retries, text = anyio.run(retries_and_text, options(server, idle_timeout=0.5))
    assert retries[0].message == (
        "no content from the model for 0.5 s (idle_timeout); keep-alive comments do not count"
    )
    assert text == "hello"


def test_a_call_past_its_total_deadline_fails_naming_the_limit() -> None:
    with FaultServer([keepalive(every=0.02, hold=5)]) as server:
        message = failure_of(options(server, retry=NO_RETRY, call_timeout=0.3, idle_timeout=60))
    assert "exceeded its total deadline (call_timeout) of 0.3 s" in message


def test_a_slow_first_byte_counts_against_the_total_deadline() -> None:
    with FaultServer([slow_first_byte(5), answer("late but fine")]) as server:
        retries, text = anyio.run(retries_and_text, options(server, call_timeout=0.5))
    assert retries[0].message == "model call exceeded its total deadline (call_timeout) of 0.5 s"
    assert text == "late but fine"


def test_the_limits_apply_to_whole_bodies_too() -> None:
    with FaultServer([slow_first_byte(5)]) as server:
        message = failure_of(options(server, retry=NO_RETRY, stream=False, call_timeout=0.3))
    assert "call_timeout" in message


def test_limits_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="idle"):
        Timeouts(idle=0)
    assert AgentOptions(call_timeout=30, idle_timeout=5).timeouts() == Timeouts(
        read=300, total=30, idle=5
    )


# --- complete answers -------------------------------------------------------------------------


def test_an_answer_whose_body_never_ends_is_taken_once_with_one_request() -> None:
    with FaultServer([never_close("hello", hold=5), answer("paid twice")]) as server:
        result = anyio.run(run, "hi", options(server, timeout=1.0))
        assert result.text == "hello"
        assert len(server.requests) == 1


def test_after_a_body_that_never_ends_the_next_call_gets_a_fresh_connection() -> None:
    with FaultServer([never_close("one", hold=5), answer("two")]) as server:
        model = http_model("openai", base_url=server.url, timeouts=Timeouts(read=2, drain=0.1))

        async def both() -> tuple[list[Any], list[Any]]:
            try:
                return await call(model), await call(model)
            finally:
                await model.aclose()

        first, second = anyio.run(both)
        assert server.connections == 2
    assert first[0] == TextDelta(text="one") and isinstance(first[-1], ModelResponded)
    assert second[0] == TextDelta(text="two") and isinstance(second[-1], ModelResponded)


def test_a_well_behaved_server_keeps_one_connection() -> None:
    with FaultServer([answer("one"), answer("two")]) as server:
        model = HttpModel(OpenAICodec(), base_url=server.url)

        async def both() -> list[Any]:
            try:
                return [await call(model), await call(model)]
            finally:
                await model.aclose()

        assert all(isinstance(events[-1], ModelResponded) for events in anyio.run(both))
        assert server.connections == 1


# --- transport faults -----------------------------------------------------------------------


@pytest.mark.parametrize("fault", [reset(), truncate(after=3)], ids=["reset", "truncated"])
def test_a_reset_or_cut_connection_is_retried(fault: Any) -> None:
    with FaultServer([fault, answer("second try")]) as server:
        retries, text = anyio.run(retries_and_text, options(server))
    assert len(retries) == 1 and text == "second try"


def test_retry_after_as_an_http_date_sets_the_wait() -> None:
    later = email.utils.formatdate(time.time() + 2, usegmt=True)
    with FaultServer([rate_limited(429, retry_after=later), answer("ok")]) as server:
        [retry], text = anyio.run(retries_and_text, options(server))
    assert 0.5 < retry.seconds <= 2  # the date, not FAST_RETRY's 0.01 s
    assert text == "ok"


# --- answers without a choice -----------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_no_usable_choice_is_the_same_failure_streamed_or_not(stream: bool) -> None:
    with FaultServer([no_choice()]) as server:
        message = failure_of(options(server, retry=NO_RETRY, stream=stream))
    assert message == "retries_exhausted: response has no choices"


def test_no_usable_choice_is_retried() -> None:
    with FaultServer([no_choice(), answer("there it is")]) as server:
        retries, text = anyio.run(retries_and_text, options(server))
    assert [r.message for r in retries] == ["response has no choices"]
    assert text == "there it is"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_malformed_response_is_a_retryable_failure_streamed_or_not(stream: bool) -> None:
    """`tool_calls` an object with finish_reason "tool_calls": not a completed empty turn."""
    with FaultServer([malformed_calls()]) as server:
        message = failure_of(options(server, retry=NO_RETRY, stream=stream))
    assert message == (
        "retries_exhausted: malformed response: `tool_calls` is an object, not an array"
    )


def test_a_malformed_response_is_retried() -> None:
    with FaultServer([malformed_calls(), answer("there it is")]) as server:
        retries, text = anyio.run(retries_and_text, options(server))
    assert [r.message for r in retries] == [
        "malformed response: `tool_calls` is an object, not an array"
    ]
    assert text == "there it is"


def test_the_fault_server_speaks_anthropic_too() -> None:
    with FaultServer([answer("bonjour")]) as server:
        opts = AgentOptions(
            provider="anthropic", model="claude", base_url=server.root, api_key="sk-ant-test-1"
        )
        assert anyio.run(run, "hi", opts).text == "bonjour"
        assert server.requests[0].headers["x-api-key"] == "sk-ant-test-1"


def test_failures_of_a_bare_http_model_are_retryable_events() -> None:
    with FaultServer([keepalive(every=0.02, hold=5)]) as server:
        model = HttpModel(OpenAICodec(), base_url=server.url, timeouts=Timeouts(idle=0.2))

        async def once() -> list[Any]:
            try:
                return await call(model)
            finally:
                await model.aclose()

        [failure] = anyio.run(once)
    assert isinstance(failure, ModelCallFailed) and failure.retryable
    assert "idle_timeout" in failure.message
