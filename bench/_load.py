"""Drive a console with `hey` (Debian's HTTP load generator, a separate process) and read its summary; record figures
in bench/results/latest.json (one entry per figure, replaced on each run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"


@dataclass(frozen=True)
class Load:
    """What `hey` measured: requests per second, latency percentiles in milliseconds, and status counts."""

    rps: float
    p50_ms: float
    p99_ms: float
    statuses: dict[str, int]

    @property
    def ok(self) -> int:
        """Return how many answers had a 2xx status."""
        return sum(n for code, n in self.statuses.items() if code.startswith("2"))

    @property
    def total(self) -> int:
        """Return how many answers there were in all."""
        return sum(self.statuses.values())


def require_hey() -> str:
    """Return hey's path, installing Debian's package when this runs as root; exit with the fix otherwise."""
    found = shutil.which("hey")
    if found:
        return found
    if os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-qq", "hey"], check=False, capture_output=True)
        found = shutil.which("hey")
        if found:
            return found
    sys.exit("hey is not installed: scripts/services.sh up installs it (or apt-get install hey: Debian's HTTP load "
             "generator)")


def _ms(text: str, percent: int) -> float:
    found = re.search(rf"^\s*{percent}% in ([0-9.]+) secs", text, re.M)
    return float(found.group(1)) * 1000 if found else float("nan")


def hey(url: str, *, clients: int, seconds: float, body: Path, headers: dict[str, str], method: str = "POST") -> Load:
    """Run hey for `seconds` with `clients` concurrent connections and return what it measured."""
    argv = [require_hey(), "-z", f"{seconds}s", "-c", str(clients), "-m", method, "-D", str(body)]
    for key, value in headers.items():
        argv += ["-H", f"{key}: {value}"]
    done = subprocess.run([*argv, url], capture_output=True, text=True, timeout=seconds + 120, check=True)
    rps = re.search(r"Requests/sec:\s+([0-9.]+)", done.stdout)
    statuses = {code: int(n) for code, n in re.findall(r"\[(\d{3})\]\s+(\d+) responses", done.stdout)}
    return Load(float(rps.group(1)) if rps else 0.0, _ms(done.stdout, 50), _ms(done.stdout, 99), statuses)


def record(figures: dict[str, dict[str, object]]) -> None:
    """Merge `figures` (name → {value, unit, target, meets, command}) into bench/results/latest.json."""
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    current = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    for value in figures.values():
        value["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    current.update(figures)
    RESULTS.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")


def table(rows: list[tuple[str, str, str, bool]]) -> None:
    """Print figure, target, measured value and verdict, one row each."""
    width = max(len(r[0]) for r in rows)
    for name, target, measured, meets in rows:
        print(f"{name:<{width}}  target {target:<22} measured {measured:<28} {'MEETS' if meets else 'MISSES'}",
              flush=True)


def on_each_backend(run: Callable[[str], T]) -> dict[str, T]:
    """Return `run(database_url)` on SQLite ("") and, when `scripts/services.sh up` recorded one, on a fresh
    PostgreSQL database."""
    from tests.conftest import _service_env
    from tests.integration.conftest import _postgres_database

    runs = {"sqlite": run("")}
    postgres = os.environ.get("STARFORGE_TEST_POSTGRES_URL") or _service_env().get("STARFORGE_TEST_POSTGRES_URL", "")
    if postgres:
        runs["postgres"] = run(_postgres_database(postgres))
    return runs


def measured(load: Load, floor: Load | None = None) -> tuple[str, dict[str, object]]:
    """Return how a load reads in the table (rate, p50, p99, non-2xx answers; beside it the floor's, when measured:
    the same load against an empty FastAPI app, bench/_floor.py) and its figure fields."""
    errors = load.total - load.ok
    text = f"{load.rps:,.0f}/s p50 {load.p50_ms:.1f} ms p99 {load.p99_ms:.1f} ms" + (
        f" ({errors} non-2xx)" if errors else "")
    fields: dict[str, object] = {"rps": round(load.rps, 1), "p50_ms": round(load.p50_ms, 2),
                                 "p99_ms": round(load.p99_ms, 2), "non_2xx": errors}
    if floor is not None:
        text += f" | floor {floor.rps:,.0f}/s p50 {floor.p50_ms:.1f} p99 {floor.p99_ms:.1f} ms"
        fields.update(floor_rps=round(floor.rps, 1), floor_p50_ms=round(floor.p50_ms, 2),
                      floor_p99_ms=round(floor.p99_ms, 2))
    return text, fields

