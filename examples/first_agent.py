"""Your first agent: two tools, one prompt, the answer streamed, the journal replayed.

    python examples/first_agent.py                      # offline: a stand-in model on 127.0.0.1
    python examples/first_agent.py --base-url http://127.0.0.1:11434/v1 --model qwen2.5
    OPENAI_API_KEY=sk-... python examples/first_agent.py --model gpt-4o-mini

Offline, the model is toolreel's scripted calculator: an OpenAI-compatible server on
127.0.0.1 that reads the arithmetic in the prompt and calls the tools, through the same
adapter a real provider goes through. The session is journaled in `first_agent.db`;
`toolreel show first_agent.db` prints it again later.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator

import anyio

from toolreel.adapters import SQLiteJournal, render_transcript
from toolreel.core import Finish
from toolreel.core.notices import TextStreamed, ToolCallAnnounced, ToolResultReady
from toolreel.shell import AgentOptions, Client, tool, verify
from toolreel.testing import ScriptedServer, calculator


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@contextlib.contextmanager
def connection(base_url: str | None, model: str) -> Iterator[tuple[str | None, str, str | None]]:
    """The server, model and key to use: those asked for, else the offline stand-in."""
    if base_url or os.environ.get("OPENAI_API_KEY"):
        yield base_url, model, None  # the key: OPENAI_API_KEY
    else:
        with ScriptedServer(calculator) as server:
            yield server.url, "calculator", "none"  # it takes any key


async def ask(options: AgentOptions, prompt: str) -> str:
    """One turn: print what the loop does as it happens; the session's id."""
    async with Client(options) as client:
        await client.query(prompt)
        async for notice in client.events():
            match notice:
                case ToolCallAnnounced(call=call):
                    print(f"\n-> {call.name}({call.arguments})")
                case ToolResultReady(result=result):
                    print(f"<- {result.content}")
                case TextStreamed(text=piece):
                    print(piece, end="", flush=True)
                case Finish(reason=reason):
                    print(f"\n[{reason.value}]")
        return client.session().session_id


def main() -> None:
    """Ask, then replay the journal and print the session's transcript."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server's .../v1 URL")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--journal", default="first_agent.db")
    parser.add_argument("prompt", nargs="?", default="What's 7 times 8, then add 5?")
    args = parser.parse_args()

    with connection(args.base_url, args.model) as (base_url, model, key):
        options = AgentOptions(
            base_url=base_url,
            model=model,
            api_key=key,
            system_prompt="You are a calculator: use the tools for every step.",
            tools=[add, multiply],
            auto_execute_tools=True,
            journal=args.journal,
        )
        session_id = anyio.run(ask, options, args.prompt)

    # The journal holds every step: folding it through the reducer again gives the same
    # effects, with no model and no tools (`verify` raises ReplayDiverged if not).
    session = verify(SQLiteJournal(args.journal), session_id)
    print(f"\nreplayed {session_id}: identical\n")
    print(render_transcript(session))


if __name__ == "__main__":
    main()
