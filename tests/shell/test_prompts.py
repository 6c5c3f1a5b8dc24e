"""What a prompt may be (issue 20, small ones): a str, or a sequence of texts and `ImagePart`s
(pydantic-ai's convention: the texts joined by newlines, the images after them); anything else
is a `ConfigError` and nothing is sent or journaled. The same rule for `Client.query`, `run`
and an agent's `build_prompt`; open_agent's `Client.query` takes a str only."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from toolreel.adapters import EventModel, MemoryJournal
from toolreel.core import (
    ConfigError,
    ImagePart,
    ModelResponded,
    PromptSubmitted,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from toolreel.shell import (
    AgentDefinition,
    AgentRunOptions,
    AgentSuccess,
    Client,
    Connection,
    OutputTool,
    execute_agent,
    run,
)
from toolreel.shell import AgentOptions as Options

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)
IMAGE = ImagePart(media_type="image/png", data=PNG)
LINKED = ImagePart(media_type="image/jpeg", url="https://example.com/cat.jpg")


def answering() -> EventModel:
    """A model that answers "ok" (and keeps every request)."""
    return EventModel(lambda _: [TextDelta(text="ok"), ModelResponded()])


async def query(prompt: Any, model: EventModel, journal: MemoryJournal, **extra: Any) -> None:
    """`prompt` as one turn of session "s"."""
    options = Options(model="m", journal=journal, session_id="s")
    async with Client(options, model=model) as client:
        await client.query(prompt, **extra)
        await client.wait()


@pytest.mark.parametrize(
    "prompt", [None, 123, b"bytes", {"text": "hi"}, ["hi", 3], ["hi", b"\x89PNG"], ("a", None)]
)
def test_a_prompt_that_is_neither_text_nor_texts_and_images_is_refused(prompt: Any) -> None:
    model, journal = answering(), MemoryJournal()
    with pytest.raises(ConfigError, match=r"^prompt=.* a str, or a list of str and ImagePart"):
        anyio.run(query, prompt, model, journal)
    assert model.requests == []
    assert list(journal.entries("s")) == []


def test_run_refuses_it_before_a_session_begins() -> None:
    model, journal = answering(), MemoryJournal()
    with pytest.raises(ConfigError, match=r"^prompt=None"):
        options = Options(model="m", journal=journal)
        anyio.run(lambda: run(None, options, model=model))  # type: ignore[arg-type]
    assert model.requests == [] and journal.sessions() == []


def test_texts_and_images_are_a_prompt_with_images() -> None:
    model, journal = answering(), MemoryJournal()
    anyio.run(lambda: query(["What is this?", IMAGE, "And this?", LINKED], model, journal))
    (request,) = model.requests
    (message,) = request.messages
    assert (message.content, message.images) == ("What is this?\nAnd this?", (IMAGE, LINKED))
    first = next(iter(journal.entries("s"))).event
    assert first == PromptSubmitted(text="What is this?\nAnd this?", images=(IMAGE, LINKED))


def test_the_images_given_besides_follow_the_prompts_own() -> None:
    model, journal = answering(), MemoryJournal()
    anyio.run(lambda: query(("Compare", IMAGE), model, journal, images=[LINKED]))
    assert model.requests[0].messages[0].images == (IMAGE, LINKED)


@attrs.frozen
class Seen:
    """The agent's output."""

    what: str


def agent_model() -> EventModel:
    """A model that records its output at once."""
    return EventModel(
        lambda _: [
            ToolCallStarted(index=0, call_id="c1", name="seen"),
            ToolCallArgumentsDelta(index=0, fragment='{"what": "a dot"}'),
            ModelResponded(finish_reason="tool_calls"),
        ]
    )


def agent(build: Any) -> AgentDefinition[str, Seen]:
    """An agent whose prompt `build` makes."""
    return AgentDefinition(build_prompt=build, output=OutputTool.of(Seen, name="seen"))


def test_an_agents_prompt_may_be_texts_and_images() -> None:
    model = agent_model()
    options = AgentRunOptions(connection=Connection(model="m"))
    result = anyio.run(
        lambda: execute_agent(
            agent(lambda text: [text, IMAGE]), "What is it?", options, model=model
        )
    )
    assert isinstance(result, AgentSuccess)
    (message,) = model.requests[0].messages
    assert (message.content, message.images) == ("What is it?", (IMAGE,))


@pytest.mark.parametrize("prompt", [None, 7, ["a", 1]])
def test_an_agents_prompt_that_is_none_is_refused_and_nothing_is_sent(prompt: Any) -> None:
    model, journal = agent_model(), MemoryJournal()
    options = AgentRunOptions(connection=Connection(model="m"))
    with pytest.raises(ConfigError, match=r"^prompt="):
        anyio.run(
            lambda: execute_agent(
                agent(lambda _: prompt), "x", options, model=model, journal=journal
            )
        )
    assert model.requests == [] and journal.sessions() == []


@pytest.mark.parametrize("prompt", [None, 123])
def test_open_agents_client_refuses_a_prompt_that_is_no_str(prompt: Any) -> None:
    from toolreel.open_agent import AgentOptions, Client  # noqa: PLC0415 - the compat layer

    journal = MemoryJournal()

    async def main() -> None:
        options = AgentOptions(system_prompt="", model="m", base_url="http://127.0.0.1:9/v1")
        client = Client(options, journal=journal, session_id="s")
        with pytest.raises(ConfigError, match=r"^prompt=.* a str$"):
            await client.query(prompt)
        await client.close()

    anyio.run(main)
    assert journal.sessions() == []
