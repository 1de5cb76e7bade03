"""Benchmarks: log ingestion (target ≥ 50,000 lines/s) and SSE delivery latency (target p99 ≤ 250 ms)."""

from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._console import start_console  # noqa: E402
from tests.integration.helpers import bundle, spec_for, submit  # noqa: E402

INGEST_TARGET = 50_000
SSE_TARGET_P99 = 0.250


def _run_token(console: object, job: str) -> str:
    from starforge.console.services.accounts import credentials as accounts
    from starforge.console.settings import load_settings
    from starforge.console.store import Database

    settings = load_settings(state_dir=console.state_dir)  # type: ignore[attr-defined]
    db = Database(settings.db_url, changes=settings.accounts_changes)
    with db.write() as session:
        user = accounts.get_user(session, "bench")
        token = accounts.issue_run_token(session, user, job)
    db.dispose()
    return token


def main() -> int:
    console, tmp = start_console({"capacity": {"cpu": 2}, "image_allowlist": ["nvcr.io"]})
    try:
        api = console.client(console.token_for("bench"))
        spec = spec_for(api, "custom/custom", exp="experiments/logs")
        spec["spec"]["framework"].update(image="nvcr.io/t/t:1", observability_url="https://example.com/x")
        job = submit(api, spec, data=bundle({"experiments/logs/train.sh": "sleep 300\n"})).json()["job_id"]
        while api.get("/api/job", params={"id": job}).json()["status"] != "running":
            time.sleep(0.05)
        token = _run_token(console, job)
        ingest = httpx.Client(base_url=f"{console.url}/api/ingest", headers={"X-StarForge-Token": token}, timeout=60)

        line = "step 123 reward=0.4821 loss=-0.1123 kl=0.0021 entropy=1.9 lr=1e-06 tokens/s=12345.6\n"
        batch = [line * 2000]
        ingest.post("/logs", json={"run_id": job, "chunks": batch})  # warm-up
        rounds = 50
        start = time.perf_counter()
        for _ in range(rounds):
            assert ingest.post("/logs", json={"run_id": job, "chunks": batch}).status_code == 200
        rate = rounds * 2000 / (time.perf_counter() - start)
        verdict = "MEETS" if rate >= INGEST_TARGET else "MISSES"
        print(f"log ingestion over HTTP (batches of 2,000 lines, {len(line)} B each): {rate:,.0f} lines/s "
              f"— target ≥ {INGEST_TARGET:,}: {verdict}")

        latencies: list[float] = []
        ready = threading.Event()
        done = threading.Event()

        def listen() -> None:
            with httpx.stream("GET", f"{console.url}/api/job/logs/stream", params={"id": job, "tail": 1},
                              headers=api.headers, timeout=None) as response:
                ready.set()
                for text in response.iter_lines():
                    if text.startswith("data: probe "):
                        sent = float(text.split()[2])
                        latencies.append(time.time() - sent)
                        if len(latencies) >= 200:
                            done.set()
                            return

        threading.Thread(target=listen, daemon=True).start()
        ready.wait(10)
        time.sleep(0.3)
        for _ in range(200):
            ingest.post("/logs", json={"run_id": job, "chunks": [f"probe {time.time():.6f}\n"]})
            time.sleep(0.02)
        done.wait(30)
        latencies.sort()
        p50 = statistics.median(latencies)
        p99 = latencies[int(0.99 * (len(latencies) - 1))]
        verdict = "MEETS" if p99 <= SSE_TARGET_P99 else "MISSES"
        print(f"SSE delivery latency ({len(latencies)} lines): p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms "
              f"— target p99 ≤ {SSE_TARGET_P99 * 1000:.0f} ms: {verdict}")
        api.post("/api/job/stop", params={"id": job})
    finally:
        console.stop()
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
