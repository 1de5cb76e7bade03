"""The last profile registry seen per console, so `sf submit --dry-run` can check profiles while offline."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from starforge.contract import ProfileEntry

__all__ = ["load_registry", "offline_registry", "save_registry"]

_FILE = ("cache", "profiles.json")


def _path(home: Path) -> Path:
    return Path(home).joinpath(*_FILE)


def _read(home: Path) -> dict[str, object]:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(_path(home).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            return data
    return {}


def save_registry(home: Path, server: str, entries: Sequence[ProfileEntry]) -> None:
    """Remember `entries` as the registry of `server` under `$FORGE_HOME/cache/profiles.json` (best effort)."""
    data = _read(home)
    data[server] = [asdict(e) for e in entries]
    target = _path(home)
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = target.with_name(f"profiles.json.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)


def load_registry(home: Path, server: str) -> list[ProfileEntry] | None:
    """Return the registry last saved for `server`, or None when there is none."""
    rows = _read(home).get(server)
    if not isinstance(rows, list):
        return None
    return [ProfileEntry.from_dict(r) for r in rows if isinstance(r, dict) and r.get("name")]


def offline_registry(home: Path, server: str | None, expressions: Sequence[str]) -> tuple[list[ProfileEntry], bool]:
    """Return the registry to check `--profile` against without a console, and whether it is the cached one.

    The registry last saved for `server` when there is one; otherwise one entry per profile name as typed, each
    one node wide enough for its largest count, so that only the names and shapes go unchecked.
    """
    cached = load_registry(home, server) if server else None
    if cached:
        return cached, True
    entries: dict[str, ProfileEntry] = {}
    for expression in expressions:
        name, _, count = expression.split("=", 1)[-1].partition(":")
        name, count = name.strip(), count.strip()
        width = int(count) if count.isdigit() and int(count) > 0 else 1
        known = entries.get(name)
        entries[name] = ProfileEntry(name, name, 1, max(width, known.gpus_per_node if known else 1))
    return list(entries.values()), False
