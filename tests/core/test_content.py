"""Images: the `ImagePart` record, and the reducer carrying a prompt's and a tool's images."""

from __future__ import annotations

import pytest

from toolreel.core import (
    CallModel,
    ChatMessage,
    ConfigError,
    HookDecided,
    ImagePart,
    LoopConfig,
    ModelResponded,
    Persist,
    PlainOutput,
    PromptSubmitted,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolSpec,
    initial_state,
    step,
)
from toolreel.core.hooks import HookPoint, Replaced
from toolreel.core.images import MAX_IMAGE_BYTES
from toolreel.core.policies import EmptyPromptPolicy

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 8
GIF = b"GIF89a" + b"\x00" * 8
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 "
IMAGE = ImagePart(media_type="image/png", data=PNG)
LINKED = ImagePart(media_type="image/jpeg", url="https://example.com/cat.jpg")


# The record ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "media_type"),
    [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")],
)
def test_of_reads_the_media_type_from_the_bytes(data: bytes, media_type: str) -> None:
    assert ImagePart.of(data) == ImagePart(media_type=media_type, data=data)


def test_of_takes_a_given_media_type_over_the_bytes() -> None:
    assert ImagePart.of(PNG, "image/webp").media_type == "image/webp"


def test_bytes_that_are_no_known_image_are_refused_without_showing_them() -> None:
    with pytest.raises(ConfigError, match="PNG, JPEG, GIF or WebP") as caught:
        ImagePart.of(b"%PDF-1.7 secret")
    assert "secret" not in str(caught.value) and "<15 bytes>" in str(caught.value)


@pytest.mark.parametrize("media_type", ["image/svg+xml", "image/tiff", "text/plain", "", "png"])
def test_an_unknown_media_type_is_refused(media_type: str) -> None:
    with pytest.raises(ConfigError, match=r"media_type=.*image/gif, image/jpeg, image/png"):
        ImagePart(media_type=media_type, data=PNG)


def test_both_data_and_url_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"'both'.*exactly one of data"):
        ImagePart(media_type="image/png", data=PNG, url="https://example.com/a.png")


def test_neither_data_nor_url_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"'neither'.*exactly one of data"):
        ImagePart(media_type="image/png")


def test_empty_bytes_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"data='<0 bytes>'.*non-empty bytes"):
        ImagePart(media_type="image/png", data=b"")


def test_more_than_the_limit_is_refused() -> None:
    with pytest.raises(ConfigError, match="at most 20971520 bytes"):
        ImagePart(media_type="image/png", data=PNG + b"\x00" * MAX_IMAGE_BYTES)


@pytest.mark.parametrize("url", ["ftp://example.com/a.png", "file:///etc/passwd", "a.png", ""])
def test_only_http_urls_are_taken(url: str) -> None:
    with pytest.raises(ConfigError, match=r"an http:// or https:// URL"):
        ImagePart(media_type="image/png", url=url)


def test_text_is_not_taken_as_bytes() -> None:
    with pytest.raises(ConfigError, match="non-empty bytes"):
        ImagePart(media_type="image/png", data="iVBORw0KGgo=")  # type: ignore[arg-type]


def test_the_repr_and_label_show_the_size_never_the_bytes() -> None:
    assert repr(IMAGE) == "ImagePart(media_type='image/png', data=<16 bytes>, url=None)"
    assert IMAGE.label() == "[image image/png, 16 bytes]"
    assert LINKED.label() == "[image image/jpeg, https://example.com/cat.jpg]"


def test_images_are_hashable_values() -> None:
    assert {IMAGE, ImagePart(media_type="image/png", data=bytes(PNG))} == {IMAGE}
    assert hash(ChatMessage(role="user", content="x", images=(IMAGE,))) is not None


def test_an_image_list_is_held_as_a_tuple_of_images() -> None:
    assert PromptSubmitted(text="x", images=[IMAGE]).images == (IMAGE,)
    with pytest.raises(ConfigError, match="ImagePart values"):
        PromptSubmitted(text="x", images=[PNG])  # type: ignore[list-item]


# The reducer --------------------------------------------------------------------------------

ECHO = ToolSpec(name="shot", description="A screenshot")


def _run(config: LoopConfig, events: list) -> tuple:
    state = initial_state(config)
    effects: list = []
    for event in events:
        state, made = step(state, event)
        effects.append(made)
    return state, effects


def test_a_prompts_images_follow_its_text_in_the_user_message_and_the_request() -> None:
    state, (effects,) = _run(LoopConfig(model="m"), [PromptSubmitted(text="what?", images=[IMAGE])])
    message = ChatMessage(role="user", content="what?", images=(IMAGE,))
    assert effects[0] == Persist(message=message)
    assert isinstance(effects[1], CallModel)
    assert effects[1].request.messages == (message,)
    assert state.history == (message,)


def test_a_text_prompt_makes_the_same_message_as_before_images_existed() -> None:
    _, (effects,) = _run(LoopConfig(model="m"), [PromptSubmitted(text="hi")])
    assert effects[0] == Persist(message=ChatMessage(role="user", content="hi"))


def test_a_new_prompt_text_from_the_hook_keeps_the_images() -> None:
    config = LoopConfig(model="m", hooks=frozenset({HookPoint.USER_PROMPT_SUBMIT}))
    events = [
        PromptSubmitted(text="what?", images=[IMAGE]),
        HookDecided(hook_id="prompt:1", decision=Replaced(value="describe it")),
    ]
    _, (_, effects) = _run(config, events)
    assert effects[0] == Persist(
        message=ChatMessage(role="user", content="describe it", images=(IMAGE,))
    )


def _one_call() -> list:
    return [
        ToolCallStarted(index=0, call_id="c1", name="shot"),
        ToolCallArgumentsDelta(index=0, fragment="{}"),
        ModelResponded(finish_reason="tool_calls"),
    ]


def test_a_tools_images_join_its_result_and_the_next_request() -> None:
    config = LoopConfig(model="m", tools=(ECHO,))
    events = [
        PromptSubmitted(text="look"),
        *_one_call(),
        ToolFinished(call_id="c1", output="a screenshot", images=[IMAGE]),
    ]
    _, effects = _run(config, events)
    call = effects[-1][-1]
    assert isinstance(call, CallModel)
    (result,) = call.request.messages[-1].tool_rounds[0].results
    assert (result.content, result.images) == ("a screenshot", (IMAGE,))


def test_an_empty_prompt_with_images_is_a_prompt_not_a_continuation() -> None:
    config = LoopConfig(
        model="m",
        tools=(ECHO,),
        auto_execute=False,
        max_iterations=1,
        empty_prompt=EmptyPromptPolicy.CONTINUE,
    )
    events = [PromptSubmitted(text="look"), *_one_call(), ToolFinished(call_id="c1", output="ok")]
    state, _ = _run(config, events)
    assert [m.role for m in state.history] == ["user", "assistant"]  # a continuation could follow
    _, effects = step(state, PromptSubmitted(text="", images=[IMAGE]))
    assert effects[0] == Persist(message=ChatMessage(role="user", content="", images=(IMAGE,)))


def test_a_structured_turns_first_user_message_carries_the_prompts_images() -> None:
    output = PlainOutput(tool=ToolSpec(name="answer"))
    state = initial_state(LoopConfig(model="m", output=output))
    _, effects = step(state, PromptSubmitted(text="what?", images=[IMAGE]))
    call = next(e for e in effects if isinstance(e, CallModel))
    assert call.request.messages[0] == ChatMessage(role="user", content="what?", images=(IMAGE,))
