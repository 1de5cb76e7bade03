"""The SSE parser on crafted byte streams, fed whole, byte by byte and split at every position."""

from __future__ import annotations

import pytest

from starforge.client import LogEvent, SSEParser


def parse(*chunks: bytes) -> list[LogEvent]:
    parser = SSEParser()
    events: list[LogEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events


def every_split(stream: bytes) -> list[list[LogEvent]]:
    """Return the events for the stream fed whole, byte by byte, and cut in two at every position."""
    results = [parse(stream), parse(*(stream[i : i + 1] for i in range(len(stream))))]
    results.extend(parse(stream[:cut], stream[cut:]) for cut in range(1, len(stream)))
    return results


LOG_STREAM = (
    b": keepalive\n"
    b"\n"
    b"id: 1700000000000-1\n"
    b"event: log\n"
    b"data: step 1 loss=0.5\n"
    b"data:   indented\n"
    b"data:\n"
    b"\n"
    b"event: log\n"
    b"data: caf\xc3\xa9 \xe2\x9c\x93\n"
    b"\n"
    b"id: 1700000000000-2\n"
    b"event: error\n"
    b"data: lines were lost\n"
    b"\n"
    b"event: end\n"
    b"data: done\n"
    b"\n"
)

EXPECTED = [
    LogEvent("log", "step 1 loss=0.5\n  indented\n", "1700000000000-1"),
    LogEvent("log", "café ✓", "1700000000000-1"),
    LogEvent("error", "lines were lost", "1700000000000-2"),
    LogEvent("end", "done", "1700000000000-2"),
]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_events_survive_any_split_and_any_line_ending(eol: bytes) -> None:
    stream = LOG_STREAM.replace(b"\n", eol)
    for events in every_split(stream):
        assert events == EXPECTED


def test_a_chunk_ending_in_cr_before_lf_is_one_line_break() -> None:
    assert parse(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [LogEvent("message", "a\nb")]


def test_log_chunk_with_trailing_newline_is_rebuilt_exactly() -> None:
    assert parse(b"event: log\ndata: a\ndata: b\ndata:\n\n") == [LogEvent("log", "a\nb\n")]


def test_only_one_space_after_the_colon_is_removed() -> None:
    assert parse(b"data:no space\n\ndata:  two\n\n") == [LogEvent("message", "no space"), LogEvent("message", " two")]


def test_event_without_data_is_dropped_even_end() -> None:
    assert parse(b"event: end\n\nevent: log\nid: 7\n\n") == []


def test_end_with_data_is_dispatched() -> None:
    assert parse(b"event: end\ndata: done\n\n") == [LogEvent("end", "done")]


def test_id_is_sticky_and_updates_on_dispatch_without_data() -> None:
    parser = SSEParser()
    assert parser.feed(b"id: 5\nevent: log\ndata: a\n\n") == [LogEvent("log", "a", "5")]
    assert parser.feed(b"event: log\ndata: b\n\n") == [LogEvent("log", "b", "5")]
    assert parser.feed(b"id: 6\n\n") == []
    assert parser.last_event_id == "6"
    assert parser.feed(b"data: c\n\n") == [LogEvent("message", "c", "6")]


def test_incomplete_event_is_not_dispatched_and_its_id_not_taken() -> None:
    parser = SSEParser()
    assert parser.feed(b"id: 9\nevent: log\ndata: partial\n") == []
    assert parser.last_event_id is None


def test_comments_unknown_fields_and_bare_field_names() -> None:
    stream = b":comment\nretry: 10\nfoo: bar\nevent: log\ndata\n\n"
    assert parse(stream) == [LogEvent("log", "")]


def test_event_type_resets_after_dispatch() -> None:
    assert parse(b"event: log\ndata: a\n\ndata: b\n\n") == [LogEvent("log", "a"), LogEvent("message", "b")]


def test_leading_bom_is_ignored_once() -> None:
    assert parse(b"\xef\xbb\xbfdata: a\n\n") == [LogEvent("message", "a")]


def test_id_with_nul_is_ignored() -> None:
    assert parse(b"id: 1\n\nid: a\x00b\ndata: x\n\n") == [LogEvent("message", "x", "1")]
