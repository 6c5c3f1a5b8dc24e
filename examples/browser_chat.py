"""The loop served to a browser: a chat page, the AI SDK's UI message stream, plain events.

    python examples/browser_chat.py              # one request in-process, its events printed
    python examples/browser_chat.py --serve      # the chat page on http://127.0.0.1:8000
    python examples/browser_chat.py --serve --base-url http://127.0.0.1:11434/v1 --model qwen2.5

`toolreel.web.app(options)` is a Starlette app: mount it in your own Starlette or FastAPI
site, or serve it with uvicorn. Offline the model is the scripted calculator on 127.0.0.1.
Without --serve this sends one message to `POST /api/events` in-process and prints the
event stream that comes back.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Iterator

import anyio
import httpx2
import uvicorn

from toolreel.shell import AgentOptions, tool
from toolreel.testing import ScriptedServer, calculator
from toolreel.web import app


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@contextlib.contextmanager
def connection(base_url: str | None, model: str) -> Iterator[tuple[str | None, str, str | None]]:
    """The server, model and key to use: those asked for, else the offline calculator."""
    if base_url or os.environ.get("OPENAI_API_KEY"):
        yield base_url, model, None  # the key: OPENAI_API_KEY
    else:
        with ScriptedServer(calculator) as server:
            yield server.url, "calculator", "none"  # it takes any key


async def one_message(options: AgentOptions) -> None:
    """POST one message to the app in-process and print each event of the stream."""
    transport = httpx2.ASGITransport(app=app(options))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        answer = await http.post("/api/events", json={"message": "What is 25 plus 17?"})
    for block in answer.text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        print(f"{fields['event']:<12} {json.loads(fields['data'])}")


def main() -> None:
    """Serve the page, or send one message in-process."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--base-url", help="an OpenAI-compatible server's .../v1 URL")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()

    with connection(args.base_url, args.model) as (base_url, model, key):
        options = AgentOptions(
            base_url=base_url, model=model, api_key=key, tools=[add], journal="browser_chat.db"
        )
        if args.serve:
            print(f"open http://127.0.0.1:{args.port}/")
            uvicorn.run(app(options), host="127.0.0.1", port=args.port, log_level="warning")
        else:
            anyio.run(one_message, options)


if __name__ == "__main__":
    main()
