"""Benchmark (on demand): masking keys and their echoes, against a former revision, same run.

Loads adapters/_redact.py and adapters/_held.py as they were at `--baseline`
(default bfd8293, where only an echo starting with a key's first 12
characters was masked) beside the current ones, and times both, alternating,
on CPU time:

- a streamed answer of 20,000 token-sized pieces (prose and code, as providers
  send them) through `held_back` and then `Redactor.event` — what every piece
  of a run whose key is known goes through — against iterating it bare; once
  clean, once with the whole key echoed every 1,000 pieces (both revisions
  mask that);
- `Redactor.text` on a log line and on a 12 KB tool output that hold no key.

Keys: an OpenAI project key (164 characters) and an Anthropic one (108).

    .venv/bin/python tests/bench/bench_redact.py [--baseline REV] [--rounds 5]
"""

from __future__ import annotations

import argparse
import functools
import random
import re
import statistics
import subprocess
import sys
import time
import types
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio

from toolreel.adapters.redaction import Redactor, held_back
from toolreel.core import ModelEvent, ModelResponded, TextDelta

ROOT = Path(__file__).resolve().parents[2]
PIECES = 20_000
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_RANDOM = random.Random(20)
KEYS = {
    "openai (164)": "sk-proj-" + "".join(_RANDOM.choices(_ALPHABET + "-_", k=156)),
    "anthropic (108)": "sk-ant-api03-" + "".join(_RANDOM.choices(_ALPHABET + "-_", k=95)),
}
ANSWER = """To read the file in chunks, open it in binary mode and call `read` with a size;
each call returns at most that many bytes, and an empty result means the end:

```python
def chunks(path: str, size: int = 65_536) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while block := handle.read(size):
            yield block
```

This keeps memory flat however large the file is (1.5 GB took 0.8 s here). If the
consumer is slower than the disk, a bounded queue between them helps; otherwise the
simple loop above is the fastest thing you can write in Python, and the operating
system's read-ahead does the rest. Note that `os.sendfile` avoids the copy entirely
when the destination is a socket.
"""
LOG_LINE = 'HTTP Request: POST http://127.0.0.1:8000/v1/chat/completions "HTTP/1.1 200 OK"'
TOOL_OUTPUT = (ANSWER * 20)[:12_000]


def tokens(text: str) -> list[str]:
    """`text` cut as a tokenizer would: words with their leading space, long ones in parts."""
    out = []
    for word in re.findall(r" ?\w+|\s+|[^\w\s]+", text):
        out += [word[i : i + 5] for i in range(0, len(word), 5)]
    return out


def stream(key: str | None) -> list[ModelEvent]:
    """PIECES text deltas of the answer (the key as one more piece every 1,000 if given)."""
    base = tokens(ANSWER)
    pieces = [base[i % len(base)] for i in range(PIECES)]
    if key is not None:
        for i in range(500, PIECES, 1000):
            pieces[i] = f" {key} "
    return [*(TextDelta(text=piece) for piece in pieces), ModelResponded()]


def baseline(rev: str) -> tuple[Any, Any]:
    """The `Redactor` class and `held_back` function of `rev`'s adapters/_redact.py and _held.py."""
    package = types.ModuleType("baseline_redaction")
    package.__path__ = []
    sys.modules[package.__name__] = package
    modules = {}
    for name in ("_redact", "_held"):
        path = f"adapters/{name}.py"
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:{path}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        module = types.ModuleType(f"{package.__name__}.{name}")
        module.__package__ = package.__name__
        sys.modules[module.__name__] = module
        exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
        modules[name] = module
    return modules["_redact"].Redactor, modules["_held"].held_back


def run_stream(events: list[ModelEvent], redactor: Any, held: Any) -> float:
    """CPU µs per piece to pass `events` through `held` and `redactor.event` (bare: None)."""

    async def source() -> AsyncIterator[ModelEvent]:
        for event in events:
            yield event

    async def main() -> int:
        if redactor is None:
            return len([event async for event in source()])
        return len([redactor.event(event) async for event in held(source(), redactor)])

    start = time.process_time()
    anyio.run(main)
    return (time.process_time() - start) / len(events) * 1e6


def run_text(text: str, redactor: Any, times: int) -> float:
    """CPU µs per call of `redactor.text(text)`."""
    masked = redactor.text
    start = time.process_time()
    for _ in range(times):
        masked(text)
    return (time.process_time() - start) / times * 1e6


def median_of(rounds: int, runs: dict[str, Callable[[], float]]) -> dict[str, float]:
    """Each run's median over `rounds` rounds, the runs alternating within a round."""
    found: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            found[name].append(run())
    return {name: statistics.median(values) for name, values in found.items()}


def main() -> None:
    """Print, per key, the per-piece and per-text costs of both revisions and their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="bfd8293", help="the revision to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    old_redactor, old_held = baseline(args.baseline)
    print(f"now vs {args.baseline}, medians of {args.rounds} alternating rounds, CPU time")
    for label, key in KEYS.items():
        new, old = Redactor.of([key]), old_redactor.of([key])
        for kind, events in (("clean", stream(None)), ("echoes", stream(key))):
            times = median_of(
                args.rounds,
                {
                    "bare": functools.partial(run_stream, events, None, None),
                    "old": functools.partial(run_stream, events, old, old_held),
                    "new": functools.partial(run_stream, events, new, held_back),
                },
            )
            bare = times["bare"]
            print(
                f"{label:16} stream {kind:6}: bare {bare:.2f} µs/piece; "
                f"{args.baseline} +{times['old'] - bare:.2f}, now +{times['new'] - bare:.2f} "
                f"µs/piece; now/{args.baseline} {times['new'] / times['old']:.2f}x overall"
            )
        for name, text, count in (("log line", LOG_LINE, 20_000), ("12 KB text", TOOL_OUTPUT, 200)):
            times = median_of(
                args.rounds,
                {
                    "old": functools.partial(run_text, text, old, count),
                    "new": functools.partial(run_text, text, new, count),
                },
            )
            print(
                f"{label:16} text {name:10}: {args.baseline} {times['old']:.2f} µs, "
                f"now {times['new']:.2f} µs ({times['new'] / times['old']:.1f}x)"
            )


if __name__ == "__main__":
    main()
