"""What a hostile job tries from inside its sandbox; it prints one `PROBE {json}` line listing everything it found.

Run as a job's own code (the test puts this file in the bundle). `argv[1]` is the console's state folder and
`argv[2]` a marker the job tries to plant in it. Every list in the report must come back empty.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys

SKIP = ("/proc", "/sys", "/dev")
RUN_ID = re.compile(r"r-[0-9a-z]{10}")


def _walk_up(start: str) -> list[str]:
    """List every folder from the job's own folder up to the root, with what each holds."""
    seen: list[str] = []
    current = os.path.abspath(start)
    while True:
        try:
            for name in os.listdir(current):
                seen.append(os.path.join(current, name))
        except OSError:
            pass
        parent = os.path.dirname(current)
        if parent == current:
            return seen
        current = parent


def _files(suffixes: tuple[str, ...]) -> list[str]:
    found = []
    for root, dirs, files in os.walk("/", onerror=lambda e: None):
        if root.startswith(SKIP):
            dirs[:] = []
            continue
        found += [os.path.join(root, f) for f in files if f.endswith(suffixes)]
    return found


def _console_databases() -> list[str]:
    """Return every SQLite file that holds the console's tables (users, tokens)."""
    hits = []
    for path in _files((".db", ".sqlite", ".sqlite3", "-wal")):
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.2) as db:
                tables = {row[0] for row in db.execute("select name from sqlite_master where type='table'")}
        except sqlite3.Error:
            continue
        if {"users", "tokens"} <= tables or "jobs" in tables:
            hits.append(path)
    return hits


def _other_runs(own_run: str) -> list[str]:
    """Return run folders (`r-` and ten base-36 characters) other than our own, anywhere in the view."""
    others = []
    for root, dirs, _names in os.walk("/", onerror=lambda e: None):
        if root.startswith(SKIP):
            dirs[:] = []
            continue
        others += [os.path.join(root, d) for d in dirs if RUN_ID.fullmatch(d) and d != own_run]
    return others


def _tokens() -> list[str]:
    """Return every ingest token readable in /proc that is not ours."""
    own = os.environ.get("STARFORGE_TOKEN", "")
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                data = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        for item in data.split("\0"):
            key, _, value = item.partition("=")
            if key in ("STARFORGE_TOKEN", "X_STARFORGE_TOKEN") and value and value != own:
                found.append(f"{pid}:{key}")
    return found


def main() -> None:
    state, marker = sys.argv[1], sys.argv[2]
    own_run = os.environ.get("STARFORGE_RUN_ID", "")
    report: dict[str, object] = {"uid": os.getuid(), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
    report["state_visible"] = [p for p in (state, os.path.join(state, "console.db"), os.path.join(state, "runs"),
                                           os.path.join(state, "bundles")) if os.path.exists(p)]
    report["walk_up"] = [p for p in _walk_up(os.getcwd()) if state in p or p.endswith(("console.db", "bundles"))]
    report["databases"] = _console_databases()
    report["other_runs"] = _other_runs(own_run)
    report["tokens"] = _tokens()
    report["env_paths"] = sorted(k for k, v in os.environ.items() if state in v)
    planted = []
    for target in (state, os.path.join(state, "runs"), os.path.dirname(state)):
        try:
            os.makedirs(target, exist_ok=True)
            with open(os.path.join(target, marker), "w") as handle:
                handle.write("planted by a job")
            planted.append(target)
        except OSError:
            continue
    report["planted_inside_view"] = planted  # only inside the sandbox's own scratch: the test checks the host
    print("PROBE " + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
