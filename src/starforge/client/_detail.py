"""Error bodies (wire-protocol §9.1): pick the `detail` text, render it for people, recover the problems."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starforge.contract import Problem

__all__ = ["Detail", "detail_text", "parse_body", "problems_from"]

_RAW_LIMIT = 240


def parse_body(body: bytes) -> Any:
    """Return the JSON value of a response body (`{}` when empty), or None when it is not JSON."""
    if not body.strip():
        return {}
    try:
        return json.loads(body.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return None


def detail_text(body: bytes, status: int | None = None) -> str:
    """Return the text a client shows for an error body: `detail`, its first item, else the raw body (240 chars)."""
    value = parse_body(body)
    detail = value.get("detail") if isinstance(value, dict) else None
    if isinstance(detail, str) and detail.strip():
        return detail.strip()
    if isinstance(detail, list) and detail:
        first = detail[0]
        if isinstance(first, dict) and "msg" in first:
            return str(first["msg"]).strip()
        return str(first).strip()
    raw = body.decode("utf-8", errors="replace").strip()[:_RAW_LIMIT]
    if raw:
        return raw
    return f"the console answered HTTP {status} without a detail" if status else "the console gave no detail"


@dataclass(frozen=True, slots=True)
class Detail:
    """A `detail` text split the §9.1 way: a title, bullets as (main, detail) pairs, and body lines."""

    title: str
    bullets: tuple[tuple[str, str], ...] = ()
    body: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Detail:
        """Split `text`: first line the title (a trailing `：` dropped), `- ` lines bullets, other lines body."""
        lines = text.strip().splitlines() or [""]
        title = lines[0].rstrip()
        if title.endswith("："):
            title = title[:-1].rstrip()
        bullets: list[tuple[str, str]] = []
        body: list[str] = []
        for line in lines[1:]:
            if line.startswith("- "):
                main, _, sub = line[2:].partition("；")
                bullets.append((main.strip(), sub.strip()))
            elif line.strip():
                body.append(line.rstrip())
        return cls(title, tuple(bullets), tuple(body))

    def render(self) -> str:
        """Return the text for a terminal: the title, then bullets (with detail lines) or else the body."""
        lines = [self.title]
        if self.bullets:
            for main, sub in self.bullets:
                lines.append(f"  - {main}")
                if sub:
                    lines.append(f"      {sub}")
        else:
            lines.extend(f"  {line}" for line in self.body)
        return "\n".join(lines)


def problems_from(body: bytes, detail: Detail) -> list[Problem]:
    """Return the rejection's problems: the body's `problems` list (each with its `data`), else one per bullet.

    Bullets of an official console's `detail` become `Problem(field, "unknown", message)`: they carry no `data`, and
    nothing is read out of their words beyond the `- field: message` split of wire-protocol §9.1.
    """
    value = parse_body(body)
    listed = value.get("problems") if isinstance(value, dict) else None
    if isinstance(listed, list) and listed:
        return [Problem.from_dict(item) for item in listed]
    problems = []
    for main, sub in detail.bullets:
        field, sep, message = main.partition(": ")
        if sep and field and " " not in field:
            problems.append(Problem(field, "unknown", message, sub))
        else:
            problems.append(Problem("<root>", "unknown", main, sub))
    return problems or [Problem("<root>", "unknown", detail.title)]
