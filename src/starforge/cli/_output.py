"""The one output owner of `sf`: data to stdout (human or `--json`), messages to stderr, documented exit codes."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, Protocol

from starforge.contract import Problem

__all__ = [
    "EXIT_OK", "EXIT_REFUSED", "EXIT_USAGE", "Output", "Refusal", "UsageError", "colour_enabled", "counted",
    "human_size", "render_problems_text", "slots",
]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2

_CODES = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "dim": "2", "bold": "1", "cyan": "36"}


def human_size(value: Any) -> str:
    """Return a byte count as `1.5 MB` (binary units), or `-` when it is not an integer."""
    if not isinstance(value, int) or isinstance(value, bool):
        return "-"
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value} B"


def counted(count: Any, noun: str, plural: str = "") -> str:
    """Return `1 file`, `2 files` (`plural` when adding an s is wrong); a count that is not an integer reads `?`."""
    if not isinstance(count, int) or isinstance(count, bool):
        return f"? {plural or noun + 's'}"
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def slots(count: Any, *, cpu: bool) -> str:
    """Return what a job takes: `1 GPU`, `8 GPUs`, or on a series without GPUs `1 CPU slot`, `2 CPU slots`."""
    return counted(count, "CPU slot") if cpu else counted(count, "GPU")


def colour_enabled(stream: Any) -> bool:
    """Return True when ANSI colour may be written to `stream` (a TTY, and neither NO_COLOR nor SF_NO_COLOR set)."""
    if os.environ.get("NO_COLOR") or os.environ.get("SF_NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class UsageError(Exception):
    """A command was called wrongly (exit 2)."""


class Refusal(Protocol):
    """What `Output.fail` reads of a refusal: a `starforge.client.ConsoleError` (or any error shaped like one)."""

    title: str
    detail: str
    hint: str
    problems: list[Problem]


def _paint(text: str, style: str, enabled: bool) -> str:
    if not enabled or not style:
        return text
    codes = ";".join(_CODES[s] for s in style.split() if s in _CODES)
    return f"\x1b[{codes}m{text}\x1b[0m"


def render_problems_text(
    title: str,
    problems: Sequence[Problem],
    warnings: Sequence[Problem] = (),
    *,
    colour: bool = False,
) -> str:
    """Render a rejection for people: the title, one bullet per problem (field, message, hint), then warnings."""
    lines: list[str] = []
    if problems:
        count = f" ({len(problems)} problems)" if len(problems) > 1 else ""
        lines.append(_paint(f"✗ {title}{count}", "red bold", colour))
        for p in problems:
            lines.append(f"  - {_paint(p.field, 'bold', colour)}: {p.message}")
            if p.hint:
                lines.append(_paint(f"      hint: {p.hint}", "dim", colour))
    for wmsg in warnings:
        lines.append(_paint(f"  ! {wmsg.field}: {wmsg.message}", "yellow", colour))
    return "\n".join(lines)


class Output:
    """Write command results and messages; every `sf` command goes through one instance."""

    def __init__(self, *, as_json: bool = False) -> None:
        self.as_json = as_json
        self.colour_err = colour_enabled(sys.stderr)
        self.colour_out = colour_enabled(sys.stdout)

    # data (stdout)
    def emit(self, data: Any, human: Callable[[Any], str | None] | None = None) -> None:
        """Print `data` as compact JSON under `--json`, else the human rendering (or JSON when there is none)."""
        if self.as_json or human is None:
            sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
            return
        text = human(data)
        if text:
            sys.stdout.write(text.rstrip("\n") + "\n")

    def line(self, text: str = "") -> None:
        """Print a line of human data to stdout (never under `--json`)."""
        if not self.as_json:
            sys.stdout.write(text + "\n")

    def table(self, rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> str:
        """Return a plain aligned text table (cheap; Rich is kept for richer views)."""
        data = [[("" if c is None else str(c)) for c in row] for row in rows]
        widths = [len(h) for h in headers]
        for row in data:
            widths = [max(w, len(c)) for w, c in zip(widths, row, strict=False)]
        head = "  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=False)).rstrip()
        out = [_paint(head, "bold", self.colour_out)]
        out.extend("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in data)
        return "\n".join(out)

    # messages (stderr)
    def info(self, text: str) -> None:
        """Print an informational message to stderr."""
        sys.stderr.write(text + "\n")

    def success(self, text: str) -> None:
        """Print a success line to stderr."""
        sys.stderr.write(_paint(f"✓ {text}", "green", self.colour_err) + "\n")

    def warn(self, text: str) -> None:
        """Print a warning to stderr."""
        sys.stderr.write(_paint(f"warning: {text}", "yellow", self.colour_err) + "\n")

    def hint(self, text: str) -> None:
        """Print a next-step hint to stderr."""
        sys.stderr.write(_paint(f"→ {text}", "cyan", self.colour_err) + "\n")

    def problems(self, title: str, problems: Sequence[Problem], warnings: Sequence[Problem] = ()) -> None:
        """Render a rejection (title, bullets with hints, warnings) to stderr."""
        text = render_problems_text(title, problems, warnings, colour=self.colour_err)
        if text:
            sys.stderr.write(text + "\n")

    def refusal_json(self, title: str, problems: Sequence[Problem] = (), warnings: Sequence[Problem] = (), *,
                     error: str = "", hint: str = "", **extra: Any) -> None:
        """Print the one JSON shape of every refusal: `{ok: false, title, error, hint, problems, warnings, …}`."""
        self.emit({"ok": False, "title": title, "error": error or title, "hint": hint,
                   "problems": [p.to_dict() for p in problems], "warnings": [w.to_dict() for w in warnings],
                   **extra})

    def abort(self, message: str, *, hint: str = "", code: int = EXIT_REFUSED) -> NoReturn:
        """Print `error: message` (and a hint) to stderr and exit with `code`; `--json` prints the refusal object."""
        if self.as_json:
            self.refusal_json(message.splitlines()[0] if message else "", hint=hint, error=message)
        sys.stderr.write(_paint(f"error: {message}", "red", self.colour_err) + "\n")
        if hint:
            self.hint(hint)
        raise SystemExit(code)

    def fail(self, error: Refusal, *, title: str = "", hint: str = "", code: int = EXIT_REFUSED,
             **extra: Any) -> NoReturn:
        """Print a refusal of the console and exit with `code`: its title, each problem at its field with its hint,
        then the next step (`hint`, else the error's); a refusal without fields is one `error:` line.

        This is the one place `sf` renders what a console refused; `--json` prints the refusal object with the
        console's `problems` (`title` names the refusal when the console gave none)."""
        heading = error.title or title or "The console refused the request"
        next_step = hint or error.hint
        if self.as_json:
            self.refusal_json(heading, error.problems, error=error.detail, hint=next_step, **extra)
        if any(p.field != "<root>" for p in error.problems):
            self.problems(heading, error.problems)
        else:
            sys.stderr.write(_paint(f"error: {error.detail or heading}", "red", self.colour_err) + "\n")
        if next_step:
            self.hint(next_step)
        raise SystemExit(code)
