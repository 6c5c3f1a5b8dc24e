"""Images: a prompt that carries one, and a tool that returns one.

    python examples/images.py                      # offline: a function plays the model
    OPENAI_API_KEY=sk-... python examples/images.py --model gpt-4o-mini

Give files, bytes, URLs or `ImagePart`s; each provider is sent its own image parts, the
journal keeps the bytes, and transcripts show `[image image/png, N bytes]`, never the
bytes. Offline, a function plays the model: it counts the images it was shown.
"""

from __future__ import annotations

import argparse
import os

import anyio

from toolreel.adapters import render_transcript
from toolreel.core import ChatMessage, ImagePart
from toolreel.shell import AgentOptions, image, run, tool
from toolreel.testing import FunctionModel, ModelInfo, ToolCalls, call

#: The smallest PNG header toolreel recognises: eight signature bytes, then a chunk.
PNG = b"\x89PNG\r\n\x1a\n" + bytes(8)


@tool
def screenshot() -> list[str | ImagePart]:
    """Take a screenshot of the app."""
    return ["the login page", image(PNG)]  # or image("shot.png"), image("https://...")


def stand_in(messages: tuple[ChatMessage, ...], info: ModelInfo) -> str | ToolCalls:
    """The offline model: ask for a screenshot, then say how many images it has seen."""
    last = messages[-1]
    if not last.tool_rounds:
        return ToolCalls([call("screenshot")])
    shown = len(messages[0].images) + sum(
        len(result.images) for result in last.tool_rounds[-1].results
    )
    return f"I have seen {shown} images: your photo and the screenshot."


def main() -> None:
    """Send a prompt with a photo; print the answer and the transcript."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()

    real = bool(os.environ.get("OPENAI_API_KEY"))
    options = AgentOptions(model=args.model if real else "", tools=[screenshot])
    model = None if real else FunctionModel(stand_in)
    photo = image(PNG)  # a path works too: image("photo.jpg")
    result = anyio.run(
        lambda: run(["Compare my photo with the app's screen.", photo], options, model=model)
    )
    print(result.text)
    print(render_transcript(result.session()))


if __name__ == "__main__":
    main()
