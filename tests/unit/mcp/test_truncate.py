"""Bounded outputs: what is kept, what was cut, and a note that says so."""

from __future__ import annotations

from starforge.mcp import clip_head, clip_items, clip_tail


def test_text_within_the_budget_is_untouched() -> None:
    for clip in (clip_head, clip_tail):
        result = clip("a\nb\n", 100)
        assert result.text == "a\nb\n" and not result.truncated and result.note == ""


def test_the_head_is_kept_up_to_the_last_line_end_and_the_cut_is_named() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    result = clip_head(text, 50, what="log", more="continue from event 7")
    assert result.text == "".join(f"line {i}\n" for i in range(7))
    assert result.cut_bytes == len(text) - len(result.text)
    assert result.cut_lines == 93
    assert result.note == (f"log truncated: kept the first {len(result.text)} bytes, cut the last "
                           f"{result.cut_bytes:,} bytes (93 lines); continue from event 7")


def test_the_tail_is_kept_from_a_line_start() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    result = clip_tail(text, 50)
    assert result.text.startswith("line 9") and result.text.endswith("line 99\n")
    assert text.endswith(result.text) and result.cut_lines == 100 - result.text.count("\n")
    assert "cut the first" in result.note


def test_multibyte_text_is_never_split_inside_a_character() -> None:
    text = "é" * 100  # two bytes each, no line ends
    head, tail = clip_head(text, 51), clip_tail(text, 51)
    assert head.text == "é" * 25 and tail.text == "é" * 25
    assert head.cut_bytes == tail.cut_bytes == 150


def test_lists_keep_the_first_items_and_count_the_rest() -> None:
    kept, note = clip_items(list(range(10)), 3, what="recipes", more="ask with a larger limit")
    assert kept == [0, 1, 2]
    assert note == "recipes truncated: showing 3 of 10, 7 left out; ask with a larger limit"
    assert clip_items([1, 2], 3) == ([1, 2], "")
