"""Benchmark: dry-run admission (`POST /api/admission/check`) under 1, 16, 64 and 256 concurrent clients (hey), on
SQLite and, when `.services/env` names one, PostgreSQL; with one worker and, when `sf console up` offers
`--workers`, two; each beside the floor (the same load against an empty FastAPI POST app, bench/_floor.py).

Targets (issue [7]): ≥ 3,500/s with p99 ≤ 30 ms at 64 clients; at 256 clients ≥ 90 % of the peak and p99 ≤ 150 ms
(issue [5]). Every answer must be a 200 with the verdict `admitted`: a fast refusal is not a fast admission.
"""

from __future__ import annotations

import functools
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._console import console_workers, start_console  # noqa: E402
from bench._floor import floor_loads  # noqa: E402
from bench._load import Load, hey, measured, on_each_backend, record, table  # noqa: E402
from tests.integration.helpers import spec_for  # noqa: E402

CLIENTS = (1, 16, 64, 256)
SECONDS = 5.0


def _run(database_url: str = "", *, workers: int = 1) -> tuple[dict[int, Load], dict[int, Load]]:
    """Return the console's loads and the floor's (the floor on SQLite's run only: it has no database)."""
    console, tmp = start_console({"capacity": {"cpu": 2}}, database_url=database_url, workers=workers)
    try:
        token = console.token_for("bench")
        with console.client(token) as api:
            spec = spec_for(api, "tinyrl/grpo", exp="experiments/bench")
            probe = api.post("/api/admission/check", json={"spec": spec, "profile": "cpu"})
            assert probe.status_code == 200 and probe.json()["ok"], probe.text
        body = Path(tempfile.mkdtemp(dir=tmp.name)) / "check.json"
        body.write_text(json.dumps({"spec": spec, "profile": "cpu"}))
        url = f"{console.url}/api/admission/check"
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        hey(url, clients=8, seconds=1, body=body, headers=headers)  # warm up
        loads = {c: hey(url, clients=c, seconds=SECONDS, body=body, headers=headers) for c in CLIENTS}
    finally:
        console.stop()
    try:
        floor = {} if database_url else floor_loads(clients=CLIENTS, seconds=SECONDS, body=body, headers=headers,
                                                     workers=workers)
        return loads, floor
    finally:
        tmp.cleanup()


def main() -> int:
    rows, figures = [], {}
    for workers in console_workers():
        floor: dict[int, Load] = {}
        for backend, (loads, measured_floor) in on_each_backend(functools.partial(_run, workers=workers)).items():
            floor = floor or measured_floor
            peak = max(load.rps for load in loads.values())
            for clients, load in loads.items():
                text, fields = measured(load, floor.get(clients))
                ok = not fields["non_2xx"]
                if clients == 64:
                    target, meets = "≥ 3,500/s, p99 ≤ 30 ms", load.rps >= 3500 and load.p99_ms <= 30 and ok
                elif clients == 256:
                    target = "≥ 90 % of peak, p99 ≤ 150 ms"
                    meets = load.rps >= 0.9 * peak and load.p99_ms <= 150 and ok
                else:
                    target, meets = "(reported)", ok
                rows.append((f"dry-run admission, {backend}, {workers} worker(s), {clients} clients", target, text,
                             meets))
                figures[f"admission_check_{backend}_{workers}w_{clients}_clients"] = {
                    **fields, "target": target, "meets": meets, "command": "python bench/admission.py"}
    table(rows)
    record(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
