"""Bounded outputs: cut text or lists to a budget and say exactly what was cut (never silently)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["Clipped", "clip_head", "clip_items", "clip_tail"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Clipped:
    """A text cut to a byte budget: what is kept, how many bytes and lines were cut, and the note that says so."""

    text: str
    cut_bytes: int = 0
    cut_lines: int = 0
    note: str = ""

    @property
    def truncated(self) -> bool:
        """Return True when something was cut."""
        return self.cut_bytes > 0


def _lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def clip_head(text: str, limit: int, *, what: str = "text", more: str = "") -> Clipped:
    """Keep the first `limit` UTF-8 bytes of `text`, cut after a line end when there is one in the kept part."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return Clipped(text)
    kept = data[: max(0, limit)]
    newline = kept.rfind(b"\n")
    if newline >= 0:
        kept = kept[: newline + 1]
    kept_text = kept.decode("utf-8", errors="ignore")
    kept = kept_text.encode("utf-8")
    cut = data[len(kept):]
    note = (f"{what} truncated: kept the first {len(kept):,} bytes, cut the last {len(cut):,} bytes "
            f"({_lines(cut):,} lines)" + (f"; {more}" if more else ""))
    return Clipped(kept_text, len(cut), _lines(cut), note)


def clip_tail(text: str, limit: int, *, what: str = "text", more: str = "") -> Clipped:
    """Keep the last `limit` UTF-8 bytes of `text`, starting after a line end when there is one in the kept part."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return Clipped(text)
    kept = data[len(data) - max(0, limit):] if limit > 0 else b""
    newline = kept.find(b"\n")
    if 0 <= newline < len(kept) - 1:
        kept = kept[newline + 1:]
    kept_text = kept.decode("utf-8", errors="ignore")
    kept = kept_text.encode("utf-8")
    cut = data[: len(data) - len(kept)]
    note = (f"{what} truncated: kept the last {len(kept):,} bytes, cut the first {len(cut):,} bytes "
            f"({_lines(cut):,} lines)" + (f"; {more}" if more else ""))
    return Clipped(kept_text, len(cut), _lines(cut), note)


def clip_items(items: Sequence[T], limit: int, *, what: str = "items", more: str = "") -> tuple[list[T], str]:
    """Return the first `limit` items and a note naming how many were left out ("" when none were)."""
    if len(items) <= limit:
        return list(items), ""
    kept = list(items[: max(0, limit)])
    note = f"{what} truncated: showing {len(kept)} of {len(items)}, {len(items) - len(kept)} left out"
    return kept, note + (f"; {more}" if more else "")
