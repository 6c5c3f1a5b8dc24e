"""Prompt-cache counters read from recorded responses of every provider that reports them.

The captures were recorded with nothing cached (every counter 0); each test sets the
provider's own cache counters in a recorded body, as a cache hit (or write) would
send it, and checks what `Usage` counts: every input token in `input_tokens`, and of
those the ones read from (`cache_read_tokens`) and written to (`cache_write_tokens`)
the cache. The unchanged captures count no cached tokens.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from traffic import decode_stream, load, response_bytes

from toolreel.adapters._providers._anthropic import AnthropicCodec
from toolreel.adapters._providers._gemini import GeminiCodec
from toolreel.adapters._providers._openai import OpenAICodec
from toolreel.adapters._providers._responses import ResponsesCodec
from toolreel.core import ModelResponded, Usage


def usage_of(events: list[Any]) -> Usage:
    """The usage of the one `ModelResponded` among `events`."""
    [responded] = [event for event in events if isinstance(event, ModelResponded)]
    return responded.usage


def with_body(case: str, edit: Any) -> bytes:
    """The recorded JSON body of `case`, edited by `edit(body)`."""
    body = copy.deepcopy(load(case)["response"]["body"])
    edit(body)
    return json.dumps(body).encode()


def test_anthropic_stream_cache_read_is_counted_inside_input() -> None:
    name = "anthropic_stream_tool_result_followup"
    recorded = response_bytes(load(name))
    assert usage_of(decode_stream(AnthropicCodec(), [recorded])).cache_read_tokens == 0
    hit = recorded.replace(
        b'"input_tokens":678,"cache_creation_input_tokens":0,"cache_read_input_tokens":0',
        b'"input_tokens":78,"cache_creation_input_tokens":0,"cache_read_input_tokens":600',
    )
    assert hit != recorded
    usage = usage_of(decode_stream(AnthropicCodec(), [hit]))
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (678, 600, 0)
    assert usage.extra == ()  # no longer kept as extras


def test_anthropic_body_cache_write_is_counted_inside_input() -> None:
    def wrote(body: dict[str, Any]) -> None:
        body["usage"].update(input_tokens=23, cache_creation_input_tokens=400)

    body = with_body("anthropic_nonstream_parallel_tool_use", wrote)
    usage = usage_of(AnthropicCodec().decode_body(body))
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (423, 0, 400)


def test_openai_chat_cached_tokens_are_counted() -> None:
    case = load("openai_chat_nonstream_single_tool_call")
    recorded = response_bytes(case)
    assert usage_of(OpenAICodec().decode_body(recorded)).cache_read_tokens == 0
    hit = recorded.replace(b'"cached_tokens": 0', b'"cached_tokens": 64')
    usage = usage_of(OpenAICodec().decode_body(hit))
    assert (usage.input_tokens, usage.cache_read_tokens) == (92, 64)


def test_openai_chat_stream_cached_tokens_are_counted() -> None:
    recorded = response_bytes(load("openai_chat_stream_single_tool_call"))
    hit = recorded.replace(b'"cached_tokens":0', b'"cached_tokens":32')
    assert hit != recorded
    assert usage_of(decode_stream(OpenAICodec(), [hit])).cache_read_tokens == 32


def test_responses_input_tokens_details_cached_tokens_are_counted() -> None:
    recorded = response_bytes(load("openai_responses_nonstream_function_call"))
    hit = recorded.replace(b'"cached_tokens": 0', b'"cached_tokens": 40')
    assert hit != recorded
    usage = usage_of(ResponsesCodec().decode_body(hit))
    assert (usage.input_tokens, usage.cache_read_tokens) == (58, 40)


def test_gemini_cached_content_token_count_is_counted() -> None:
    def cached(body: dict[str, Any]) -> None:
        body["usageMetadata"]["cachedContentTokenCount"] = 50

    body = with_body("gemini_generate_parallel_function_calls", cached)
    usage = usage_of(GeminiCodec().decode_body(body))
    assert (usage.input_tokens, usage.cache_read_tokens) == (83, 50)
    assert usage.extra == (("reasoning_tokens", 190),)
