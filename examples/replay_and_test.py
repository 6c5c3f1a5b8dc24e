"""Replay and testing: record a session, replay it exactly, see what a change would change.

    python examples/replay_and_test.py             # offline: the scripted calculator
    OPENAI_API_KEY=sk-... python examples/replay_and_test.py --model gpt-4o-mini

1. A session runs and is journaled (`calc.jsonl`).
2. `verify` folds the journal through the reducer again: the same effects, no model.
3. `replay` with a changed system prompt shows the first step that would differ.
4. `Recording.rerun` runs your options again offline: the recorded model answers, the
   recorded tool outputs are returned, and a request that differs raises RequestMismatch.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator

import anyio
import attrs

from toolreel.adapters import JSONLJournal, render_transcript
from toolreel.shell import AgentOptions, Divergence, Recording, replay, run, tool, verify
from toolreel.shell.errors import RequestMismatch
from toolreel.testing import ScriptedServer, calculator


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


def main() -> None:
    """Record, verify, replay a change, rerun offline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server's .../v1 URL")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()

    with connection(args.base_url, args.model) as (base_url, model, key):
        options = AgentOptions(
            base_url=base_url,
            model=model,
            api_key=key,
            system_prompt="Be brief.",
            tools=[add],
            journal="calc.jsonl",
        )
        result = anyio.run(run, "What is 25 plus 17?", options)
    print("1. recorded:", result.text)

    journal = JSONLJournal("calc.jsonl")
    session = verify(journal, result.session_id)  # raises ReplayDiverged on a difference
    print("2. replayed: identical,", len(session.history), "messages")

    changed = attrs.evolve(journal.config(result.session_id), system_prompt="Be verbose.")
    divergence = replay(journal, result.session_id, config=changed)
    assert isinstance(divergence, Divergence)
    print(f"3. with another system prompt, step {divergence.seq} differs:")
    print(divergence.request_diff)
    journal.close()

    # No server, no key: the recording answers. The same options replay as recorded...
    recording = Recording.from_file("calc.jsonl", result.session_id)
    offline = attrs.evolve(options, journal=None)
    anyio.run(recording.rerun, offline)
    print("4. rerun offline: the same requests")
    # ... as often as you like (each rerun starts from the beginning), and a change to
    # what the program asks is caught, with a readable diff.
    try:
        anyio.run(recording.rerun, attrs.evolve(offline, system_prompt="Be verbose."))
    except RequestMismatch as mismatch:
        print(mismatch)
    print()
    print(render_transcript(session, hide=["usage"]))


if __name__ == "__main__":
    main()
