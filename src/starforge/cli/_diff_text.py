"""The terminal view of `sf job diff`: the summary first, then each differing section as `-`/`+` lines (or `a → b`),
the bundles' per-file stat, and the final metrics side by side; colour only when `colour` is set (a TTY)."""

from __future__ import annotations

from typing import Any

__all__ = ["diff_text"]

_CODES = {"red": "31", "green": "32", "bold": "1", "dim": "2", "yellow": "33"}


def _paint(text: str, style: str, colour: bool) -> str:
    if not colour:
        return text
    return "\x1b[" + ";".join(_CODES[s] for s in style.split()) + "m" + text + "\x1b[0m"


def _number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _change_lines(change: dict[str, Any], colour: bool) -> list[str]:
    key, a, b = change["key"], change.get("a"), change.get("b")
    if change["change"] == "changed" and len(f"{a}{b}") <= 60:
        return [f"  {key}: {_paint(str(a), 'red', colour)} → {_paint(str(b), 'green', colour)}"]
    lines = [f"  {key}:"]
    if a is not None:
        lines.append(_paint(f"    - {a}", "red", colour))
    if b is not None:
        lines.append(_paint(f"    + {b}", "green", colour))
    return lines


def _files_lines(files: list[dict[str, Any]], colour: bool) -> list[str]:
    width = max(len(f["path"]) for f in files)
    lines = []
    for f in files:
        if f.get("binary"):
            counts = "binary"
        else:
            counts = (_paint("+" + str(f["added"]), "green", colour) + " "
                      + _paint("-" + str(f["removed"]), "red", colour))
        mark = {"added": " (new)", "removed": " (gone)"}.get(f["status"], "")
        lines.append(f"    {f['path'].ljust(width)} | {counts}{mark}")
    return lines


def diff_text(diff: dict[str, Any], *, colour: bool = False) -> str:
    """Return the readable diff of `GET /api/jobs/{a}/diff/{b}`'s object."""
    a, b = diff["a"], diff["b"]
    lines = [f"A: {a['job_ref']} ({a['name']}, {a['status']})", f"B: {b['job_ref']} ({b['name']}, {b['status']})", "",
             _paint(diff["summary"], "bold", colour)]
    for section in diff["sections"]:
        files = diff.get("files") if section["name"] == "lab" else None
        if section["same"] and not files:
            continue
        lines += ["", _paint(section["title"], "bold", colour)]
        for change in section["changes"]:
            lines += _change_lines(change, colour)
        if files:
            lines.append(f"  experiment files ({len(files)} changed):")
            lines += _files_lines(files, colour)
    same = [s["title"] for s in diff["sections"] if s["same"] and not (s["name"] == "lab" and diff.get("files"))]
    if same and not diff["identical"]:
        lines += ["", _paint("Same: " + ", ".join(same), "dim", colour)]
    if diff["metrics"]:
        lines += ["", _paint("Final metrics", "bold", colour)]
        width = max(len(m["key"]) for m in diff["metrics"])
        lines.append(f"  {'metric'.ljust(width)}  {'A':>12}  {'B':>12}  {'B − A':>12}")
        for m in diff["metrics"]:
            lines.append(f"  {m['key'].ljust(width)}  {_number(m['a']):>12}  {_number(m['b']):>12}  "
                         f"{_number(m['delta']):>12}")
    return "\n".join(lines)
