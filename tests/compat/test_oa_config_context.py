"""toolreel.open_agent.context: token estimates and history trimming, as open_agent's."""

from __future__ import annotations

import math
import sys
import types
from typing import Any

import pytest

from toolreel.core import ConfigError
from toolreel.open_agent.context import estimate_tokens, truncate_messages

CHAT = [
    {"role": "system", "content": "You are a helpful assistant"},
    {"role": "user", "content": "Hello!"},
    {"role": "assistant", "content": "Hi there! How can I help you today?"},
]


def _fake_tiktoken(known_models: set[str]) -> tuple[types.ModuleType, list[str]]:
    """A tiktoken whose encodings count words, and the list of encodings it handed out."""
    handed_out: list[str] = []

    class Words:
        def encode(self, text: str, *, disallowed_special: Any = ()) -> list[int]:
            return [0] * len(text.split())

    def encoding_for_model(model: str) -> Words:
        if model not in known_models:
            raise KeyError(model)
        handed_out.append(model)
        return Words()

    def get_encoding(name: str) -> Words:
        handed_out.append(name)
        return Words()

    module = types.ModuleType("tiktoken")
    module.encoding_for_model = encoding_for_model  # type: ignore[attr-defined]
    module.get_encoding = get_encoding  # type: ignore[attr-defined]
    return module, handed_out


@pytest.fixture
def no_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import tiktoken` fails, as where it is not installed."""
    monkeypatch.setitem(sys.modules, "tiktoken", None)


def test_no_messages_is_zero_tokens() -> None:
    assert estimate_tokens([]) == 0


@pytest.mark.usefixtures("no_tiktoken")
def test_without_tiktoken_about_four_characters_make_a_token_plus_framing() -> None:
    # "user" + "Hi" = 6 characters -> 2 tokens; 3 framing the message, 3 priming the reply.
    assert estimate_tokens([{"role": "user", "content": "Hi"}]) == 2 + 3 + 3


@pytest.mark.usefixtures("no_tiktoken")
def test_without_tiktoken_the_estimate_stays_within_bounds_of_the_text() -> None:
    chars = sum(len(m["role"]) + len(m["content"]) for m in CHAT)
    estimate = estimate_tokens(CHAT)
    assert math.ceil(chars / 4) <= estimate <= math.ceil(chars / 4) + 3 * len(CHAT) + 3


@pytest.mark.usefixtures("no_tiktoken")
def test_nested_tool_arguments_are_counted_but_keys_are_not() -> None:
    arguments = '{"query": "select * from table"}'
    call = {"type": "tool_use", "id": "call_1", "name": "db_query", "input": {"sql": arguments}}
    with_call = estimate_tokens([{"role": "assistant", "content": [call]}])
    without_call = estimate_tokens([{"role": "assistant", "content": []}])
    assert with_call - without_call >= len(arguments) // 4
    renamed = {**call, "input": {"a_much_longer_argument_name": arguments}}
    assert estimate_tokens([{"role": "assistant", "content": [renamed]}]) == with_call


@pytest.mark.usefixtures("no_tiktoken")
def test_numbers_count_and_empty_values_do_not() -> None:
    bare = estimate_tokens([{"role": "tool", "content": ""}])
    assert estimate_tokens([{"role": "tool", "content": "", "x": None, "y": True}]) == bare
    assert estimate_tokens([{"role": "tool", "content": "", "n": 12345678}]) == bare + 2


@pytest.mark.usefixtures("no_tiktoken")
def test_openai_style_tool_calls_are_counted() -> None:
    plain = {"role": "assistant", "content": None}
    calling = {
        **plain,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "x" * 40}}
        ],
    }
    assert estimate_tokens([calling]) >= estimate_tokens([plain]) + 10


def test_with_tiktoken_the_models_encoding_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    tiktoken, handed_out = _fake_tiktoken({"gpt-4"})
    monkeypatch.setitem(sys.modules, "tiktoken", tiktoken)
    # words: system(1) + 5, user(1) + 1, assistant(1) + 8 = 17; framing 3 * 3 + 3.
    assert estimate_tokens(CHAT, model="gpt-4") == 17 + 12
    assert handed_out == ["gpt-4"]


def test_a_model_tiktoken_does_not_know_uses_its_default_encoding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tiktoken, handed_out = _fake_tiktoken(set())
    monkeypatch.setitem(sys.modules, "tiktoken", tiktoken)
    assert estimate_tokens(CHAT, model="qwen2.5-32b-instruct") == 17 + 12
    assert handed_out == ["cl100k_base"]


def test_an_encoding_that_cannot_load_falls_back_to_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    by_characters = estimate_tokens(CHAT)

    def offline(name: str) -> None:
        raise ConnectionError("no network to fetch the encoding")

    tiktoken = types.ModuleType("tiktoken")
    tiktoken.encoding_for_model = offline  # type: ignore[attr-defined]
    tiktoken.get_encoding = offline  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiktoken", tiktoken)
    assert estimate_tokens(CHAT) == by_characters


def test_trimming_keeps_the_system_message_and_the_most_recent_ones() -> None:
    history = [{"role": "system", "content": "rules"}] + [
        {"role": role, "content": f"{role} {i}"} for i in range(3) for role in ("user", "assistant")
    ]
    trimmed = truncate_messages(history, keep=3)
    assert [m["content"] for m in trimmed] == ["rules", "assistant 1", "user 2", "assistant 2"]


def test_trimming_without_a_system_message_keeps_the_most_recent() -> None:
    history = [{"role": "user", "content": str(i)} for i in range(5)]
    assert [m["content"] for m in truncate_messages(history, keep=2)] == ["3", "4"]


def test_only_a_leading_system_message_is_kept() -> None:
    history = [
        {"role": "user", "content": "first"},
        {"role": "system", "content": "late rules"},
        {"role": "user", "content": "last"},
    ]
    assert truncate_messages(history, keep=1) == [{"role": "user", "content": "last"}]


def test_preserve_system_false_treats_it_like_any_message() -> None:
    history = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
    ]
    assert truncate_messages(history, keep=2, preserve_system=False) == history[1:]
    assert truncate_messages(history, keep=3, preserve_system=False) == history


def test_keep_zero_leaves_only_the_system_message() -> None:
    history = [{"role": "system", "content": "rules"}, {"role": "user", "content": "q"}]
    assert truncate_messages(history, keep=0) == history[:1]
    assert truncate_messages(history, keep=0, preserve_system=False) == []


def test_trimming_returns_a_new_list_and_leaves_the_history_alone() -> None:
    history = [{"role": "system", "content": "rules"}, {"role": "user", "content": "q"}]
    snapshot = [dict(m) for m in history]
    everything = truncate_messages(history, keep=10)
    assert everything == history
    assert everything is not history
    truncate_messages(history, keep=0)
    assert history == snapshot
    assert truncate_messages([]) == []


@pytest.mark.parametrize("keep", [-1, 1.5, True, "3", None])
def test_keep_must_be_a_whole_number_of_messages(keep: Any) -> None:
    with pytest.raises(ConfigError, match="a whole number of messages >= 0"):
        truncate_messages([{"role": "user", "content": "q"}], keep=keep)
