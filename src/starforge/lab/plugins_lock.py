"""An experiment's `plugins.lock.json` (recipes-and-locks §13): read it, and match `--plugin ID@VERSION` against it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from starforge.contract import Problem

__all__ = ["PLUGINS_LOCK_API", "PLUGINS_LOCK_FILE", "read_plugins_lock", "select_plugins"]

PLUGINS_LOCK_FILE = "plugins.lock.json"
PLUGINS_LOCK_API = "forge/plugins-lock/v1"


def _invalid(message: str) -> list[Problem]:
    return [Problem(PLUGINS_LOCK_FILE, "plugin_lock_invalid", message,
                    f'keep {{"apiVersion": "{PLUGINS_LOCK_API}", "plugins": [{{"id", "version", "digest"}}]}}')]


def read_plugins_lock(exp_dir: Path) -> tuple[list[dict[str, str]], list[Problem]]:
    """Return the pinned plugins in file order (none without a file), or a problem when the file is unreadable."""
    file = Path(exp_dir) / PLUGINS_LOCK_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        return [], []
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return [], _invalid(f"{PLUGINS_LOCK_FILE} cannot be read: {exc}")
    if not isinstance(data, dict) or data.get("apiVersion") != PLUGINS_LOCK_API:
        found = data.get("apiVersion") if isinstance(data, dict) else type(data).__name__
        return [], _invalid(f"{PLUGINS_LOCK_FILE} is not a {PLUGINS_LOCK_API} object (found {found!r})")
    rows = data.get("plugins")
    if not isinstance(rows, list):
        return [], _invalid(f"{PLUGINS_LOCK_FILE}: plugins must be a list")
    entries: list[dict[str, str]] = []
    for index, row in enumerate(rows):
        values = row if isinstance(row, dict) else {}
        if not all(isinstance(values.get(k), str) and values[k].strip() for k in ("id", "version", "digest")):
            return [], _invalid(f"{PLUGINS_LOCK_FILE}: plugins[{index}] needs a non-empty id, version and digest")
        entries.append({"id": values["id"], "version": values["version"], "digest": values["digest"]})
    return entries, []


def select_plugins(exp_dir: Path, requested: Sequence[str]) -> tuple[list[dict[str, str]], list[Problem]]:
    """Return the plugins to send (the lock's entries, verbatim) and a problem for each `--plugin` it does not pin."""
    entries, problems = read_plugins_lock(exp_dir)
    if problems:
        return [], problems
    by_id = {entry["id"]: entry for entry in entries}
    for item in requested:
        plugin_id, _, version = item.strip().partition("@")
        plugin_id, version = plugin_id.strip(), version.strip()
        pinned = by_id.get(plugin_id)
        where = f"{Path(exp_dir).name}/{PLUGINS_LOCK_FILE}"
        if pinned is None:
            problems.append(Problem("--plugin", "plugin_unknown", f"{plugin_id or item!r} is not pinned in {where}",
                                    f"pin it with its registry digest in {where} (id, version, digest)"))
        elif version and pinned["version"] != version:
            problems.append(Problem("--plugin", "plugin_unknown",
                                    f"{where} pins {plugin_id}@{pinned['version']}, not {version}",
                                    f"pass --plugin {plugin_id}@{pinned['version']}, or re-pin {plugin_id}@{version}"))
    return entries, problems
