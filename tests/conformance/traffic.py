"""Reading the recorded provider traffic in tests/conformance/traffic/ at test time.

The corpus ships in the repository (its README.md says where each capture came
from). Set TOOLREEL_TRAFFIC_DIR to read it from elsewhere; when the folder is
absent every conformance test fails, naming the path (conftest.py).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from toolreel.adapters import Codec, unstructure

TRAFFIC = Path(os.environ.get("TOOLREEL_TRAFFIC_DIR", Path(__file__).resolve().parent / "traffic"))


def load(case: str) -> dict[str, Any]:
    """The recorded interaction `<case>.json`."""
    return json.loads((TRAFFIC / f"{case}.json").read_text(encoding="utf-8"))


def raw(name: str) -> bytes:
    """A file of the corpus, byte for byte."""
    return (TRAFFIC / name).read_bytes()


def response_bytes(case: dict[str, Any]) -> bytes:
    """The response body as sent (streamed file, exact text, or re-serialised JSON)."""
    response = case["response"]
    if "body_file" in response:
        return raw(response["body_file"])
    if "body_text" in response:
        return response["body_text"].encode("utf-8")
    return json.dumps(response["body"]).encode("utf-8")


def sse_from_chunks_jsonl(name: str, named: bool = False) -> bytes:
    """Re-frame a `.chunks.jsonl` fixture (SSE framing stripped upstream) as an SSE body.

    With `named`, each event gets the `event:` line its payload's "type" names (Anthropic).
    """
    frames = []
    for line in raw(name).decode("utf-8").splitlines():
        if not line.strip():
            continue
        prefix = f"event: {json.loads(line)['type']}\n" if named else ""
        frames.append(f"{prefix}data: {line}\n\n")
    return "".join(frames).encode("utf-8")


def chunkings(body: bytes, seed: int = 7) -> dict[str, list[bytes]]:
    """The body cut the ways a network might deliver it."""
    rng = random.Random(seed)
    pieces, start = [], 0
    while start < len(body):
        size = rng.randint(1, 64)
        pieces.append(body[start : start + size])
        start += size
    return {
        "whole": [body],
        "lines": body.splitlines(keepends=True),
        "bytes": [body[i : i + 1] for i in range(len(body))],
        "random": pieces,
    }


def decode_stream(codec: Codec, chunks: list[bytes]) -> list[Any]:
    """Feed the chunks to a fresh decoder and close it."""
    decoder = codec.stream_decoder()
    events = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.close()


def jsonable(events: list[Any]) -> list[dict[str, Any]]:
    """Events as tagged JSON data, for snapshots."""
    return [{"type": type(event).__name__, **unstructure(event)} for event in events]
