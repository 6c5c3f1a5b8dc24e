"""The provider registry, keys from the environment, keys never shown (adapters/_providers)."""

from __future__ import annotations

import anyio
import pytest

from toolreel.adapters import (
    PROVIDERS,
    AnthropicCodec,
    EventModel,
    GeminiCodec,
    OpenAICodec,
    Secret,
    api_key,
    codec_for,
    http_model,
)
from toolreel.core import ModelRequest, ModelResponded, TextDelta
from toolreel.shell import AgentOptions


def test_every_provider_name_has_a_codec_and_an_unknown_one_is_refused() -> None:
    assert sorted(PROVIDERS) == ["anthropic", "gemini", "ollama", "openai", "openai-responses"]
    for name in PROVIDERS:
        assert codec_for(name).name == name
    with pytest.raises(ValueError, match="unknown provider 'mistral'; known: anthropic, gemini"):
        codec_for("mistral")


def test_the_registry_is_a_mapping_a_provider_can_be_added_to_and_removed_from() -> None:
    """It was a dict: a codec registered under a new name is what `codec_for` makes."""

    class EchoCodec(OpenAICodec):
        name = "echo"

    PROVIDERS["echo"] = EchoCodec
    try:
        assert "echo" in PROVIDERS
        assert isinstance(codec_for("echo"), EchoCodec)
        assert dict(PROVIDERS)["echo"] is EchoCodec
        assert PROVIDERS["anthropic"] is AnthropicCodec  # a lazy entry reads as its class
    finally:
        del PROVIDERS["echo"]
    assert "echo" not in PROVIDERS
    assert len(PROVIDERS) == 5


def test_an_anthropic_http_model_gets_the_cache_points_and_others_are_left_alone() -> None:
    anthropic = http_model("anthropic", base_url="http://127.0.0.1:9", cache_points=frozenset())
    assert anthropic.codec == AnthropicCodec(cache_points=frozenset())
    assert http_model("anthropic", base_url="http://127.0.0.1:9").codec == AnthropicCodec(
        cache_points=frozenset({"tools", "system", "messages"})
    )
    assert type(http_model("gemini", base_url="http://127.0.0.1:9").codec) is GeminiCodec


@pytest.mark.parametrize(
    ("provider", "environ", "expected"),
    [
        ("openai", {"OPENAI_API_KEY": "sk-env"}, "sk-env"),
        ("openai-responses", {"OPENAI_API_KEY": "sk-env"}, "sk-env"),
        ("anthropic", {"ANTHROPIC_API_KEY": "ak"}, "ak"),
        ("gemini", {"GOOGLE_API_KEY": "g2"}, "g2"),
        ("gemini", {"GEMINI_API_KEY": "g1", "GOOGLE_API_KEY": "g2"}, "g1"),
        ("ollama", {"OPENAI_API_KEY": "sk-env"}, None),
        ("openai", {}, None),
    ],
)
def test_the_key_comes_from_the_providers_usual_variable(provider, environ, expected) -> None:
    key = api_key(codec_for(provider), None, environ)
    assert (key.value if key else None) == expected
    assert api_key(codec_for(provider), "given", environ) == Secret("given")


def test_keys_never_show_in_a_repr_or_str() -> None:
    model = http_model("openai", key="sk-very-secret", base_url="http://127.0.0.1:9/v1")
    options = AgentOptions(model="m", api_key="sk-very-secret")
    for text in (
        repr(Secret("sk-very-secret")),
        str(Secret("sk-very-secret")),
        repr(model),
        repr(options),
    ):
        assert "sk-very-secret" not in text


def test_base_url_follows_each_sdks_convention() -> None:
    request = ModelRequest(model="gemini-2.5-flash", system=None, messages=(), tools=())
    assert (
        codec_for("openai").endpoint("http://h/v1", request, stream=True)
        == "http://h/v1/chat/completions"
    )
    assert (
        codec_for("anthropic").endpoint("http://h", request, stream=True) == "http://h/v1/messages"
    )
    assert codec_for("ollama").endpoint("http://h", request, stream=True) == "http://h/api/chat"
    assert codec_for("gemini").endpoint("http://h", request, stream=True) == (
        "http://h/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert codec_for("gemini").endpoint("http://h", request, stream=False) == (
        "http://h/v1beta/models/gemini-2.5-flash:generateContent"
    )


def test_function_model_plays_its_handlers_events_and_keeps_the_requests() -> None:
    model = EventModel(lambda request: [TextDelta(text=request.model), ModelResponded()])
    request = ModelRequest(model="m1", system=None, messages=(), tools=())

    async def main() -> list:
        return [event async for event in model.stream(request)]

    assert anyio.run(main) == [TextDelta(text="m1"), ModelResponded()]
    assert model.requests == [request]


def test_a_hosted_provider_without_a_key_is_refused_at_once_naming_the_variable() -> None:
    with pytest.raises(ValueError, match=r"no API key for anthropic: .*ANTHROPIC_API_KEY"):
        http_model("anthropic", environ={})
    assert http_model("openai", base_url="http://127.0.0.1:1234/v1", environ={}) is not None
    assert http_model("ollama", environ={}) is not None  # a local server needs no key
