"""A key a provider echoes split across stream pieces, whole or any 8 characters of it, is
masked like a whole one: in the journal, the notices, the answer, tool arguments and reasoning
(adapters/_held.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreel.adapters import EventModel
from toolreel.adapters.redaction import Redactor, held_back
from toolreel.core import (
    Finish,
    ModelEvent,
    ModelResponded,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from toolreel.core.notices import TextStreamed
from toolreel.shell import AgentOptions, Client, tool

KEY = "sk-proj-Zq8vN3xR7tLw2Yp5Kd9Hs4Bm6Jc1Fg0"
PREFIX = KEY[:12]
REDACTOR = Redactor.of([KEY])


def pieces(text: str, size: int) -> list[str]:
    """`text` cut every `size` characters."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def td(text: str) -> TextDelta:
    """A text delta."""
    return TextDelta(text=text)


async def through(events: list[ModelEvent]) -> list[ModelEvent]:
    """What `held_back` lets out of `events`."""

    async def source() -> AsyncIterator[ModelEvent]:
        for event in events:
            yield event

    return [event async for event in held_back(source(), REDACTOR)]


def texts(events: list[ModelEvent]) -> str:
    """The answer text the events carry."""
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.parametrize("size", [1, 2, 5, 11, 13])
def test_a_key_split_across_text_deltas_is_masked_and_the_rest_kept(size: int) -> None:
    answer = f"your key is {KEY}, keep it safe"
    out = anyio.run(through, [*map(td, pieces(answer, size)), ModelResponded()])
    assert texts(out) == "your key is ***, keep it safe"
    assert all(PREFIX[:3] not in e.text for e in out if isinstance(e, TextDelta))
    assert isinstance(out[-1], ModelResponded)


def test_text_that_shares_less_than_8_characters_with_a_key_arrives_whole_and_in_order() -> None:
    answer = "sk-proj-abc is not a key, Zq8vN3x (7) neither; s, sk, sk- are fine"
    out = anyio.run(through, [*map(td, pieces(answer, 3)), ModelResponded()])
    assert texts(out) == answer
    assert isinstance(out[-1], ModelResponded)


def test_held_text_goes_out_before_the_next_event_of_another_kind() -> None:
    events: list[ModelEvent] = [
        TextDelta(text="call sk-"),
        ToolCallStarted(index=0, call_id="c1", name="f"),
        ToolCallArgumentsDelta(index=0, fragment='{"k": "sk-proj-Zq8'),
        ToolCallArgumentsDelta(index=0, fragment=KEY[11:] + '"}'),
        ModelResponded(),
    ]
    out = anyio.run(through, events)
    assert out[0] == TextDelta(text="call ")
    assert out[1] == TextDelta(text="sk-")  # not a key after all: let out before the call starts
    assert isinstance(out[2], ToolCallStarted)
    arguments = "".join(e.fragment for e in out if isinstance(e, ToolCallArgumentsDelta))
    assert arguments == '{"k": "***"}'


def test_a_signed_reasoning_piece_carries_the_held_text_with_it() -> None:
    events: list[ModelEvent] = [
        ReasoningDelta(text="the key " + KEY[:15]),
        ReasoningDelta(text=KEY[15:] + " is secret", signature="sig"),
        ModelResponded(),
    ]
    out = anyio.run(through, events)
    reasoning = "".join(e.text for e in out if isinstance(e, ReasoningDelta))
    assert reasoning == "the key *** is secret"
    assert [e.signature for e in out if isinstance(e, ReasoningDelta)][-1] == "sig"


def test_a_stream_that_stops_early_still_lets_out_what_it_held() -> None:
    out = anyio.run(through, [TextDelta(text="ends with sk-pro")])
    assert texts(out) == "ends with sk-pro"


@pytest.mark.parametrize("size", [1, 3, 7, 8])
def test_the_end_of_a_key_split_across_text_deltas_is_masked(size: int) -> None:
    answer = f"it ends ...{KEY[-18:]}, see?"
    out = anyio.run(through, [*map(td, pieces(answer, size)), ModelResponded()])
    assert texts(out) == "it ends ...***, see?"
    assert all(KEY[-8:-4] not in e.text for e in out if isinstance(e, TextDelta))


def test_the_tail_held_back_is_the_longest_end_that_is_a_piece_of_a_key() -> None:
    assert REDACTOR.tail("abc sk-pr") == 4
    assert REDACTOR.tail("abc") == 2  # "c" is in the key ("Jc1"), "bc" is not
    assert REDACTOR.tail("s") == 0
    assert REDACTOR.tail(f"x {KEY[20:30]}") == 2
    assert REDACTOR.tail("ends with a space ") == len("ends with a space ")


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(alphabet="ab sk-Zq8", max_size=12),
    after=st.text(alphabet="ab sk-Zq8", max_size=12),
    start=st.integers(min_value=0, max_value=len(KEY)),
    length=st.integers(min_value=0, max_value=len(KEY)),
    sizes=st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=8),
)
def test_pieces_are_masked_exactly_as_the_whole_text_would_be(
    before: str, after: str, start: int, length: int, sizes: list[int]
) -> None:
    answer = before + KEY[start : start + length] + after
    chunks, rest = [], answer
    for size in sizes * 20:
        if not rest:
            break
        chunks.append(rest[:size])
        rest = rest[size:]
    if rest:
        chunks.append(rest)
    out = anyio.run(through, [*map(td, chunks), ModelResponded()])
    assert texts(out) == REDACTOR.text(answer)


@tool
def remember(note: str) -> str:
    """Keep a note."""
    return f"noted ({len(note)} characters)"


def test_a_session_journals_no_piece_of_a_split_key(tmp_path: Path) -> None:
    calls = iter(
        [
            [
                *map(td, pieces(f"I will note {KEY}. ", 4)),
                ToolCallStarted(index=0, call_id="c1", name="remember"),
                *(
                    ToolCallArgumentsDelta(index=0, fragment=f)
                    for f in pieces(f'{{"note": "{KEY}"}}', 3)
                ),
                ModelResponded(finish_reason="tool_calls"),
            ],
            [*map(td, pieces(f"Done: {KEY}", 6)), ModelResponded()],
        ]
    )
    model = EventModel(lambda request: next(calls))
    options = AgentOptions(
        model="m",
        api_key=KEY,
        tools=[remember],
        auto_execute_tools=True,
        journal=str(tmp_path / "j.db"),
    )

    async def main() -> tuple[str, list[str]]:
        async with Client(options, model=model) as client:
            await client.query("go")
            notices = [notice async for notice in client.events()]
        streamed = [n.text for n in notices if isinstance(n, TextStreamed)]
        finish = notices[-1]
        assert isinstance(finish, Finish)
        return finish.text or "", streamed

    answer, streamed = anyio.run(main)
    assert answer == "Done: ***"
    assert "".join(streamed) == "I will note ***. Done: ***"
    for path in tmp_path.iterdir():
        assert PREFIX[:6].encode() not in path.read_bytes(), path.name


def test_reasoning_held_back_keeps_the_provider_that_sent_it() -> None:
    """A reasoning piece held back (it may end in part of a key) goes out with its provider."""
    events = [
        ReasoningDelta(text="think sk-", provider="ollama"),  # "sk-" may begin a key: held
        ReasoningDelta(text="and more", provider="ollama"),
        ModelResponded(),
    ]
    out = anyio.run(through, events)
    reasoning = [event for event in out if isinstance(event, ReasoningDelta)]
    assert reasoning and {event.provider for event in reasoning} == {"ollama"}
    assert "".join(event.text for event in reasoning) == "think sk-and more"
