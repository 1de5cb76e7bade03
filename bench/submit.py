"""Benchmark: persisted submissions (`POST /api/jobs` with a 20 KB bundle, as `sf submit` sends them) on SQLite,
1, 16, 64 and 256 concurrent clients (hey), and on PostgreSQL when `.services/env` names one; with one worker and,
when `sf console up` offers `--workers`, two; each beside the floor (the same load against an empty FastAPI POST
app, bench/_floor.py).

Targets (issue [7]): SQLite ≥ 500/s with p99 ≤ 100 ms at 16 clients; PostgreSQL ≥ 400/s at 16 clients; p50 ≤ 5 ms
with 1 client. Jobs ask for a series with no capacity, so they wait and nothing runs: the figure is admission and
its commit. Every answer must be a 2xx.
"""

from __future__ import annotations

import functools
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._console import console_workers, start_console  # noqa: E402
from bench._floor import floor_loads  # noqa: E402
from bench._load import Load, hey, measured, on_each_backend, record, table  # noqa: E402
from tests.integration.helpers import bundle, spec_for, submit  # noqa: E402

SECONDS = 5.0
CLIENTS = (1, 16, 64, 256)
CONFIG = {"capacity": {"cpu": 2}, "quota": {"max_concurrent_jobs": 1_000_000, "max_concurrent_gpus": 1_000_000}}


def _bundle_20k() -> bytes:
    noise = random.Random(7).randbytes(20 * 1024).hex()[: 20 * 1024]  # incompressible text: ~20 KB gzipped
    return bundle({"experiments/bench/config.yaml": "grpo: {}\n", "experiments/bench/notes.txt": noise})


def _run(database_url: str = "", *, workers: int = 1) -> tuple[dict[int, Load], dict[int, Load]]:
    """Return the console's loads and the floor's (the floor on SQLite's run only: it has no database)."""
    console, tmp = start_console(CONFIG, database_url=database_url, workers=workers)
    try:
        token = console.token_for("bench")
        data = _bundle_20k()
        with console.client(token) as api:
            spec = spec_for(api, "tinyrl/grpo", exp="experiments/bench", series="h200")
            probe = submit(api, spec, data=data, profile="h200")
            assert probe.status_code < 300, probe.text
        meta = {"exp": "experiments/bench", "profile": "h200", "git_commit": "3f2a9c1", "git_dirty": False,
                "config_sha": "none", "spec": spec}
        body = Path(tempfile.mkdtemp(dir=tmp.name)) / "bundle.tar.gz"
        body.write_bytes(data)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/gzip",
                   "X-Forge-Meta": json.dumps(meta, ensure_ascii=True)}
        url = f"{console.url}/api/jobs"
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
            for clients, load in loads.items():
                text, fields = measured(load, floor.get(clients))
                ok = not fields["non_2xx"]
                if clients == 1:
                    target, meets = "p50 ≤ 5 ms", load.p50_ms <= 5 and ok
                elif clients != 16:
                    target, meets = "(reported)", ok
                elif backend == "sqlite":
                    target, meets = "≥ 500/s, p99 ≤ 100 ms", load.rps >= 500 and load.p99_ms <= 100 and ok
                else:
                    target, meets = "≥ 400/s", load.rps >= 400 and ok
                rows.append((f"submission (20 KB), {backend}, {workers} worker(s), {clients} clients", target, text,
                             meets))
                figures[f"submit_{backend}_{workers}w_{clients}_clients"] = {
                    **fields, "target": target, "meets": meets, "command": "python bench/submit.py"}
    table(rows)
    record(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
