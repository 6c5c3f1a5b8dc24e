"""Images end to end: a prompt's and a tool's images through Client, the journal and the CLI."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from click.testing import CliRunner

from toolreel.adapters import (
    AnthropicCodec,
    EventModel,
    SQLiteJournal,
    load_session,
    persisted_messages,
    render_transcript,
)
from toolreel.adapters.records import event_data
from toolreel.cli import cli
from toolreel.core import (
    ChatMessage,
    ConfigError,
    ImagePart,
    ModelRequest,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    Client,
    OutputTool,
    execute_agent,
    image,
    run,
    tool,
    verify,
)
from toolreel.shell.errors import ContentRefused, RunFailed
from toolreel.shell.scripted import ScriptedServer, text, tool_calls

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
B64 = base64.b64encode(PNG).decode()
PNG_URL = f"data:image/png;base64,{B64}"
IMAGE = ImagePart(media_type="image/png", data=PNG)


@tool
def screenshot() -> list[Any]:
    """Take a screenshot."""
    return ["the screen", IMAGE]


@tool
def photo() -> ImagePart:
    """A photo, nothing else."""
    return IMAGE


def options(server: ScriptedServer, **extra: Any) -> AgentOptions:
    return AgentOptions(model="m", base_url=server.url, api_key="sk-test", **extra)


@pytest.fixture
def png_file(tmp_path: Path) -> Path:
    path = tmp_path / "shot.png"
    path.write_bytes(PNG)
    return path


# Building images ------------------------------------------------------------------------------


def test_image_reads_a_file_bytes_a_url_or_a_data_url(png_file: Path) -> None:
    assert image(png_file) == IMAGE
    assert image(str(png_file)) == IMAGE
    assert image(PNG) == IMAGE
    assert image(PNG_URL) == IMAGE
    assert image("https://example.com/a.webp?size=2") == ImagePart(
        media_type="image/webp", url="https://example.com/a.webp?size=2"
    )


def test_an_empty_file_is_refused_naming_it(tmp_path: Path) -> None:
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    with pytest.raises(ConfigError, match=r"empty\.png.*not an empty one"):
        image(empty)


def test_a_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.png.*a readable image file"):
        image(tmp_path / "nope.png")


def test_a_file_of_an_unknown_type_is_refused(tmp_path: Path) -> None:
    drawing = tmp_path / "drawing.svg"
    drawing.write_bytes(b"<svg/>")
    with pytest.raises(ConfigError, match="PNG, JPEG, GIF or WebP"):
        image(drawing)


def test_a_url_without_an_image_extension_needs_a_media_type() -> None:
    with pytest.raises(ConfigError, match="give media_type"):
        image("https://example.com/picture")
    assert image("https://example.com/picture", media_type="image/png").url is not None


# Through a Client, over HTTP on 127.0.0.1 ----------------------------------------------------


def test_a_prompts_image_reaches_the_server_as_an_image_url_part(png_file: Path) -> None:
    with ScriptedServer([text("A tiny black square.")]) as server:
        result = anyio.run(lambda: run("What is this?", options(server), images=[png_file]))
    assert result.text == "A tiny black square."
    assert server.requests[0]["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": PNG_URL}},
        ],
    }
    assert result.history[0] == ChatMessage(role="user", content="What is this?", images=(IMAGE,))


def test_a_tools_image_reaches_the_server_after_its_tool_message() -> None:
    script = [tool_calls(("call_1", "screenshot", {})), text("I see the screen.")]
    with ScriptedServer(script) as server:
        anyio.run(lambda: run("Look at my screen", options(server, tools=[screenshot])))
    assert server.requests[1]["messages"][-2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "the screen"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "The image returned by tool 'screenshot' (call call_1):"},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
            ],
        },
    ]


def _calling_photo_then_answering(request: ModelRequest) -> list[Any]:
    if len(request.messages) == 1:
        return [
            ToolCallStarted(index=0, call_id="toolu_1", name="photo"),
            ToolCallArgumentsDelta(index=0, fragment="{}"),
            ModelResponded(finish_reason="tool_use"),
        ]
    return [TextDelta(text="A photo."), ModelResponded()]


def test_a_tool_returning_an_image_becomes_an_anthropic_tool_result_with_an_image_block() -> None:
    model = EventModel(_calling_photo_then_answering)
    anyio.run(lambda: run("Show me", AgentOptions(model="m", tools=[photo]), model=model))
    body = AnthropicCodec().encode(model.requests[1], stream=True)
    assert body["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": B64},
                    }
                ],
            }
        ],
    }


def test_a_manual_result_with_an_image_reaches_the_server() -> None:
    script = [tool_calls(("call_1", "photo", {})), text("A photo.")]
    with ScriptedServer(script) as server:

        async def main() -> None:
            async with Client(options(server, tools=[photo])) as client:
                await client.query("Show me")
                _ = [item async for item in client.events()]
                await client.add_tool_result("call_1", ["my photo", IMAGE])
                _ = [item async for item in client.events()]

        anyio.run(main)
    assert server.requests[1]["messages"][-2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "my photo"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "The image returned by tool 'photo' (call call_1):"},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
            ],
        },
    ]


# Text-only models: refused, never dropped ----------------------------------------------------


def test_a_text_only_model_refuses_a_prompts_images_at_once() -> None:
    async def main() -> None:
        async with Client(options(server, model_images=False)) as client:
            await client.query("What is this?", images=[IMAGE])

    refused = pytest.raises(ContentRefused, match=r"openai: the model is configured text-only")
    with ScriptedServer([text("never")]) as server, refused:
        anyio.run(main)
    assert server.requests == []


def test_a_text_only_model_fails_the_turn_when_a_tool_returns_an_image() -> None:
    script = [tool_calls(("call_1", "photo", {})), text("never")]
    failed = pytest.raises(RunFailed, match=r"the result of call call_1 \(photo\) carries")
    with ScriptedServer(script) as server, failed:
        anyio.run(lambda: run("Show me", options(server, tools=[photo], model_images=False)))
    assert len(server.requests) == 1  # the request with the image was never sent


# The journal: base64 on disk, round trip, replay, transcripts, logs ---------------------------


def test_a_session_with_images_replays_from_its_journal_and_shows_placeholders(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "j.db"
    script = [tool_calls(("call_1", "screenshot", {})), text("Done.")]
    caplog.set_level(logging.DEBUG)
    with ScriptedServer(script) as server:
        opts = options(server, tools=[screenshot], journal=str(path), session_id="s")
        anyio.run(lambda: run("Compare", opts, images=[IMAGE]))
    journal = SQLiteJournal(path)
    try:
        verify(journal, "s")  # every effect recomputed from the events matches the journal
        stored = json.dumps([[event_data(e.event), e.effects] for e in journal.entries("s")])
        assert stored.count(B64) == 2  # once in the prompt's event, once in the tool's
        user, answer = persisted_messages(journal.entries("s"))
        assert user.images == (IMAGE,)
        assert answer.tool_rounds[0].results[0].images == (IMAGE,)
        transcript = render_transcript(load_session(journal, "s"))
    finally:
        journal.close()
    assert "**User:** Compare [image image/png, 16 bytes]" in transcript
    assert "[image image/png, 16 bytes]" in transcript.split("← result:")[1]
    assert B64 not in transcript and B64 not in caplog.text


def test_toolreel_run_sends_each_image_given(png_file: Path, tmp_path: Path) -> None:
    with ScriptedServer([text("Two squares.")]) as server:
        args = ["run", "Compare these", "--image", str(png_file), "--image", str(png_file)]
        args += ["--base-url", server.url, "--model", "m", "--journal", str(tmp_path / "j.db")]
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "Two squares." in result.stdout
    parts = server.requests[0]["messages"][-1]["content"]
    assert [part["type"] for part in parts] == ["text", "image_url", "image_url"]


def test_toolreel_run_refuses_an_empty_image_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    result = CliRunner().invoke(cli, ["run", "x", "--image", str(empty), "--model", "test"])
    assert result.exit_code == 2
    assert "'--image'" in result.stderr and "not an empty one" in result.stderr


def _user_parts(request: dict[str, Any]) -> list[str]:
    """The part types of a request's last (user) message ("text" for plain content)."""
    content = request["messages"][-1]["content"]
    return ["text"] if isinstance(content, str) else [part["type"] for part in content]


def test_toolreel_chat_sends_image_with_the_first_prompt_only(png_file: Path) -> None:
    with ScriptedServer([text("A square."), text("Nothing new.")]) as server:
        args = ["chat", "--image", str(png_file), "--base-url", server.url, "--model", "m"]
        result = CliRunner().invoke(cli, args, input="What is this?\nAnd now?\n")
    assert result.exit_code == 0, result.output
    assert [_user_parts(request) for request in server.requests] == [
        ["text", "image_url"],
        ["text"],
    ]


def test_a_chat_image_line_attaches_an_image_to_the_next_prompt(
    png_file: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.png"
    lines = f"Hello\n/image {png_file}\n/image {missing}\n/image {png_file}\nCompare\n"
    with ScriptedServer([text("Hi."), text("Two squares.")]) as server:
        args = ["chat", "--base-url", server.url, "--model", "m"]
        result = CliRunner().invoke(cli, args, input=lines)
    assert result.exit_code == 0, result.output
    assert [_user_parts(request) for request in server.requests] == [
        ["text"],
        ["text", "image_url", "image_url"],
    ]
    assert server.requests[1]["messages"][-1]["content"][0]["text"] == "Compare"
    assert result.stderr.count("attached [image image/png, 16 bytes] to the next prompt") == 2
    assert "error: " in result.stderr and "missing.png" in result.stderr  # and the chat goes on


# Structured-output agents: a prompt's images ----------------------------------------------


@attrs.frozen
class Caption:
    text: str


def captioner() -> AgentDefinition[str, Caption]:
    return AgentDefinition(
        build_prompt=lambda subject: f"Caption this {subject}.",
        output=OutputTool.of(Caption, name="record_caption"),
    )


def test_execute_agent_sends_the_prompts_images_and_journals_them(
    png_file: Path, tmp_path: Path
) -> None:
    path = tmp_path / "agent.db"
    with ScriptedServer([tool_calls(("c1", "record_caption", {"text": "A square."}))]) as server:
        result = anyio.run(
            lambda: execute_agent(
                captioner(), "photo", options(server), images=[png_file], journal=str(path)
            )
        )
    assert isinstance(result, AgentSuccess) and result.output == Caption(text="A square.")
    assert server.requests[0]["messages"][-1]["content"] == [
        {"type": "text", "text": "Caption this photo."},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
    ]
    assert result.metadata.history[0].images == (IMAGE,)
    journal = SQLiteJournal(path)
    try:
        verify(journal, result.metadata.session_id)  # the run folds again from its journal
    finally:
        journal.close()


def test_execute_agent_with_a_text_only_model_refuses_images_before_sending(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agent.db"
    refused = pytest.raises(ContentRefused, match=r"text-only .* user message 1 carries \[image")
    with ScriptedServer([text("never")]) as server, refused:
        anyio.run(
            lambda: execute_agent(
                captioner(),
                "photo",
                options(server, model_images=False),
                images=[IMAGE],
                journal=str(path),
                session_id="a1",
            )
        )
    assert server.requests == []
    journal = SQLiteJournal(path)
    try:
        assert "a1" not in journal.sessions()  # nothing was journaled
    finally:
        journal.close()
