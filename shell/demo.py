"""`make demo`: a calculator agent (the open_agent plan's example), run for real through `Client`.

Without an API key or `--base-url`, a built-in scripted calculator model
answers over real HTTP on 127.0.0.1 through the same OpenAI-compatible
adapter (streamed tool calls, several in parallel where steps are independent,
chained rounds where they are not): `ScriptedServer(calculator)`, which a
user's own script reaches as `toolreel.testing.ScriptedServer` and
`toolreel.testing.calculator`. With `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
`GEMINI_API_KEY` or `--base-url` (Ollama, LM Studio, vLLM, ...) a real model
answers. Tools run for real, the session is journaled (in a temporary file,
or `--journal`: a file or a `postgresql://` URL), then replayed step by step
against the journal, and its transcript is printed. A journal that cannot be
opened is one `error:` line (exit 1) before anything runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import anyio

from toolreel.adapters import Journal, JournalError, Session, render_transcript
from toolreel.adapters.providers import DEFAULT_MODELS
from toolreel.core import Finish, arguments_object
from toolreel.core.notices import ToolCallAnnounced, ToolResultReady
from toolreel.core.outcomes import FinishReason

from ._client import Client
from ._journal_files import open_location
from ._options import AgentOptions
from ._replay import Divergence, replay
from ._tools import Tool, tool
from .scripted import ScriptedServer, calculator

#: What `toolreel serve --scripted` reuses, and the demo's entry point.
__all__ = ["SYSTEM", "TOOLS", "main"]

PROMPTS = (
    "What is 25 plus 17?",
    "Calculate 144 divided by 12",
    "What's 7 times 8, then add 5?",
)
SYSTEM = (
    "You are a helpful calculator assistant. Use the provided tools to perform "
    "calculations. Always show your work and explain the result."
)
KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}


@tool("add", "Add two numbers", {"a": float, "b": float})
async def add(args: dict[str, float]) -> dict[str, float]:
    """a + b."""
    return {"result": args["a"] + args["b"]}


@tool("subtract", "Subtract two numbers", {"a": float, "b": float})
async def subtract(args: dict[str, float]) -> dict[str, float]:
    """a - b."""
    return {"result": args["a"] - args["b"]}


@tool("multiply", "Multiply two numbers", {"a": float, "b": float})
async def multiply(args: dict[str, float]) -> dict[str, float]:
    """a * b."""
    return {"result": args["a"] * args["b"]}


@tool("divide", "Divide two numbers", {"a": float, "b": float})
async def divide(args: dict[str, float]) -> dict[str, float]:
    """a / b."""
    if args["b"] == 0:
        raise ValueError("Cannot divide by zero")
    return {"result": args["a"] / args["b"]}


TOOLS: list[Tool] = [add, subtract, multiply, divide]


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The demo's command line."""
    parser = argparse.ArgumentParser(prog="toolreel demo", description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=["openai", "anthropic", "gemini", "ollama"])
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    parser.add_argument(
        "--journal", help="SQLite (.db) or JSON-lines (.jsonl) file, or a postgresql:// URL"
    )
    return parser.parse_args(argv)


def _real_provider(args: argparse.Namespace) -> str | None:
    """The provider to use for a real model, or None for the scripted one."""
    if args.provider:
        return str(args.provider)
    if args.base_url:
        return "openai"
    return next((name for name, key in KEYS.items() if os.environ.get(key)), None)


def options(
    args: argparse.Namespace, journal: Journal, server: ScriptedServer | None
) -> AgentOptions:
    """The calculator agent's options, pointed at the real model or the scripted one."""
    provider = "openai" if server else (_real_provider(args) or "openai")
    return AgentOptions(
        system_prompt=SYSTEM,
        model=args.model or ("scripted-calculator" if server else DEFAULT_MODELS.get(provider, "")),
        base_url=server.url if server else args.base_url,
        provider=provider,
        tools=TOOLS,
        auto_execute_tools=True,
        max_tool_iterations=5,
        temperature=0.1,
        journal=journal,
        session_id="calculator-demo",
    )


async def converse(opts: AgentOptions) -> int:
    """Ask the three questions in one conversation, showing each call, error and answer."""
    async with Client(opts) as client:
        for prompt in PROMPTS:
            print(f"\nUser: {prompt}")
            await client.query(prompt)
            async for notice in client.events():
                match notice:
                    case ToolCallAnnounced(call=call):
                        print(f"  tool call: {call.name}({arguments_object(call.arguments)})")
                    case ToolResultReady(result=result) if result.is_error:
                        print(f"  tool error: {result.content}")
                    case Finish(text=answer, reason=reason):
                        if answer:
                            print(f"Assistant: {answer}")
                        if reason is not FinishReason.COMPLETED:
                            print(f"  [{reason.value}]")
        print(f"\nHistory: {len(client.history)} messages, journaled as {opts.session_id!r}.")
    return 0


def replay_and_show(journal: Journal, session_id: str) -> int:
    """Replay the journaled session step by step, then print its transcript."""
    result = replay(journal, session_id)
    if isinstance(result, Divergence):
        print(f"\nReplay diverged:\n{result}")
        return 1
    assert isinstance(result, Session), "the demo journals a chat session"
    print(f"\nReplay: all {result.events} journaled steps gave the recorded effects again.")
    print("Transcript:\n")
    print(render_transcript(result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; the exit code says whether every turn completed."""
    args = _arguments(argv)
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        try:  # a file, or a postgresql:// URL kept as it is
            journal = open_location(args.journal or folder / "demo.db")
        except JournalError as exc:
            print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 1
        stack.callback(journal.close)
        server = None
        if _real_provider(args) is None:
            server = stack.enter_context(ScriptedServer(calculator))
            print(
                "A scripted calculator model answers (offline, on 127.0.0.1): set OPENAI_API_KEY,"
            )
            print("ANTHROPIC_API_KEY or GEMINI_API_KEY, or pass --base-url, to use a real model.")
        else:
            print(
                f"Model: {_real_provider(args)} {args.model or ''} {args.base_url or ''}".rstrip()
            )
        opts = options(args, journal, server)
        code = anyio.run(converse, opts)
        return code or replay_and_show(journal, str(opts.session_id))


if __name__ == "__main__":
    sys.exit(main())
