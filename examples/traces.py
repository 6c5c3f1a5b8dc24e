"""Logs and traces: toolreel's log records, and OpenTelemetry spans of every turn.

    python examples/traces.py                      # offline: the scripted calculator
    OPENAI_API_KEY=sk-... python examples/traces.py --model gpt-4o-mini

toolreel logs on the `toolreel` logger and prints nothing until your application
configures logging. `toolreel.otel.instrument()` (`pip install 'toolreel[otel]'`) makes
every turn that starts afterwards a span, with a span per model call and per tool call.
Here the spans are kept in memory and printed as a tree.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
from collections.abc import Iterator

import anyio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolreel.otel import instrument, uninstrument
from toolreel.shell import AgentOptions, run, tool
from toolreel.testing import ScriptedServer, calculator


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


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


def print_tree(spans: tuple[ReadableSpan, ...]) -> None:
    """Each span under its parent, with a few of its attributes."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent else None
        children.setdefault(parent, []).append(span)

    def show(span: ReadableSpan, depth: int) -> None:
        attributes = span.attributes or {}
        tokens = attributes.get("gen_ai.usage.output_tokens")
        print("  " * depth + span.name + (f"  ({tokens} tokens out)" if tokens else ""))
        context = span.get_span_context()
        for child in sorted(
            children.get(context.span_id if context else None, []), key=lambda s: s.start_time or 0
        ):
            show(child, depth + 1)

    for root in children.get(None, []):
        show(root, 0)


def main() -> None:
    """Configure logging, instrument, run one prompt, print the spans."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server's .../v1 URL")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()

    # Rounds at INFO, warnings (the iteration cap, retries); one line per request at DEBUG.
    logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
    logging.getLogger("toolreel.model").setLevel(logging.DEBUG)
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # its own line per request

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(tracer_provider=provider)  # or instrument(): the global TracerProvider
    try:
        with connection(args.base_url, args.model) as (base_url, model, key):
            options = AgentOptions(
                base_url=base_url,
                model=model,
                api_key=key,
                tools=[multiply, add],
                auto_execute_tools=True,
            )
            result = anyio.run(run, "What's 7 times 8, then add 5?", options)
    finally:
        uninstrument()
    print(result.text)
    print_tree(exporter.get_finished_spans())


if __name__ == "__main__":
    main()
