"""SSE and NDJSON framing (adapters/_providers/_framing.py), in any chunking."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolreel.adapters._providers._framing import LineParser, SSEEvent, SSEParser


def parse(body: bytes, cuts: list[int] | None = None) -> list[SSEEvent]:
    """Feed `body` cut at `cuts` (or whole) and flush."""
    parser, events, start = SSEParser(), [], 0
    for cut in [*sorted(cuts or []), len(body)]:
        events += parser.feed(body[start:cut])
        start = cut
    return events + parser.flush()


def test_named_events_multiline_data_comments_and_ids() -> None:
    body = (
        b': a comment\nevent: content_block_delta\nid: 7\ndata: {"a":\ndata:1}\n\ndata: plain\n\n'
    )
    assert parse(body) == [
        SSEEvent(event="content_block_delta", data='{"a":\n1}', id="7"),
        SSEEvent(data="plain", id="7"),
    ]


def test_crlf_and_cr_line_ends_split_between_chunks() -> None:
    body = b"data: a\r\ndata: b\r\n\r\ndata: c\r\rdata: d\n\n"
    expected = [SSEEvent(data="a\nb"), SSEEvent(data="c"), SSEEvent(data="d")]
    for cut in range(1, len(body)):
        assert parse(body, [cut]) == expected, cut


def test_a_utf8_character_split_across_chunks_survives() -> None:
    body = "data: 22°C ☀\n\n".encode()
    assert parse(body, list(range(1, len(body)))) == [SSEEvent(data="22°C ☀")]


def test_an_unterminated_event_at_the_end_is_dropped() -> None:
    assert parse(b"data: complete\n\ndata: cut off") == [SSEEvent(data="complete")]


def test_blank_events_and_unknown_fields_dispatch_nothing() -> None:
    assert parse(b"\n\nretry: 10\nfoo: bar\n\n") == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="ab: \r\n{}", max_size=12), max_size=6),
    st.lists(st.integers(0, 200), max_size=8),
)
def test_any_chunking_gives_the_same_events(lines: list[str], cuts: list[int]) -> None:
    body = "".join(lines).encode()
    cuts = [c for c in cuts if 0 < c < len(body)]
    assert parse(body, cuts) == parse(body)


def test_ndjson_lines_across_chunks_and_a_last_line_without_newline() -> None:
    parser = LineParser()
    lines = parser.feed(b'{"a": 1}\n\n{"b"') + parser.feed(b': 2}\r\n{"c": 3}')
    assert lines + parser.flush() == ['{"a": 1}', '{"b": 2}', '{"c": 3}']
