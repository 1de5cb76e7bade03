"""The raw log stream's framing (the web console's terminal view): carriage returns kept, whole characters only."""

from __future__ import annotations

import json

from starforge.console.services.logs.stream import format_raw_event, whole_characters


def test_a_raw_event_keeps_carriage_returns_in_one_json_line() -> None:
    event = format_raw_event("a\r50%\x1b[A\r\nb 🚀\n".encode(), 7)
    head, name, data, blank, end = event.split("\n")
    assert (head, name, blank, end) == ("id: 7", "event: raw", "", "")
    assert json.loads(data.removeprefix("data: ")) == "a\r50%\x1b[A\r\nb 🚀\n"
    assert json.loads(format_raw_event(b"bad \xff", 1).split("\n")[2][6:]) == "bad \ufffd"


def test_a_character_cut_short_waits_for_its_rest() -> None:
    rocket = "🚀".encode()
    for cut in range(1, len(rocket)):
        assert whole_characters(b"go " + rocket[:cut]) == b"go "
    assert whole_characters(b"go " + rocket) == b"go " + rocket
    assert whole_characters("é".encode()) == "é".encode() and whole_characters(b"") == b""
    assert whole_characters(b"x\xff") == b"x\xff"  # not a character's start: left to be replaced
