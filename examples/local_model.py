"""A small local model that writes its tool calls as text: `tool_call_recovery` makes them calls.

    python examples/local_model.py                      # offline: a scripted server on 127.0.0.1
    python examples/local_model.py --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b
    python examples/local_model.py --provider anthropic --model claude-sonnet-4-5   # a key set

Offline, an OpenAI-compatible server on 127.0.0.1 answers as a Qwen model behind a server
without a tool parser does: the call written as `<tool_call>{...}</tool_call>` in the text.
The loop recovers it as it streams, runs the tool and asks again.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

import anyio

from toolreel.shell import AgentOptions, run, tool
from toolreel.testing import ScriptedServer, text

#: What the offline "local model" says: a call in its text, then the answer.
SCRIPT = [
    text('Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'),
    text("It is sunny in Paris, 21 °C."),
]


@tool
def get_weather(city: str) -> str:
    """Tomorrow's weather in a city."""
    return f"{city}: sunny, 21 °C"


@contextlib.contextmanager
def server(base_url: str | None, provider: str) -> Iterator[tuple[str | None, str | None]]:
    """The server to ask and its key: the one given, a hosted provider, or the scripted one."""
    if base_url or provider != "openai":
        yield base_url, None  # the key: the provider's variable (OPENAI_API_KEY, ...)
    else:
        with ScriptedServer(SCRIPT) as scripted:
            yield scripted.url, "none"  # the scripted server takes any key


def main() -> None:
    """One prompt; print each tool call the loop ran and the answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="e.g. Ollama's http://127.0.0.1:11434/v1")
    parser.add_argument("--model", default="qwen2.5:7b")
    parser.add_argument(
        "--provider",
        default="openai",
        choices=["openai", "openai-responses", "anthropic", "gemini", "ollama"],
    )
    args = parser.parse_args()

    with server(args.base_url, args.provider) as (base_url, key):
        options = AgentOptions(
            provider=args.provider,
            base_url=base_url,
            model=args.model,
            api_key=key,
            tools=[get_weather],
            # Off by default; "auto" reads Hermes/Qwen, Llama 3 and Mistral formats.
            tool_call_recovery="auto" if args.provider in ("openai", "ollama") else None,
            on_tool_call=lambda call: print(f"tool call: {call.name} {call.arguments}"),
        )
        result = anyio.run(run, "What's the weather in Paris tomorrow?", options)
    print(result.text)


if __name__ == "__main__":
    main()
