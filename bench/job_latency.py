"""Benchmark: submit → running latency of the local executor (target p50 ≤ 1 s)."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._console import start_console  # noqa: E402
from tests.integration.helpers import bundle, spec_for, submit  # noqa: E402

TARGET_P50 = 1.0
SAMPLES = 15
CONFIG = Path(__file__).resolve().parents[1] / "src/starforge/recipes/builtin/tinyrl/grpo/template/config.yaml"


def main() -> int:
    console, tmp = start_console({"capacity": {"cpu": 2}})
    try:
        api = console.client(console.token_for("bench"))
        data = bundle({"experiments/lat/config.yaml": CONFIG.read_text()})
        spec = spec_for(api, "tinyrl/grpo", exp="experiments/lat", hyperparams={"max_num_steps": 3})
        latencies = []
        for _ in range(SAMPLES):
            start = time.perf_counter()
            job = submit(api, spec, data=data).json()["job_id"]
            while True:
                status = api.get("/api/job", params={"id": job}).json()["status"]
                if status not in ("queued", "pending", "submitted"):
                    latencies.append(time.perf_counter() - start)
                    break
                time.sleep(0.005)
            while api.get("/api/job", params={"id": job}).json()["status"] not in ("succeeded", "failed"):
                time.sleep(0.05)
        latencies.sort()
        p50 = statistics.median(latencies)
        p95 = latencies[int(0.95 * (len(latencies) - 1))]
        verdict = "MEETS" if p50 <= TARGET_P50 else "MISSES"
        print(f"submit → running on the local executor ({SAMPLES} jobs): p50 {p50 * 1000:.0f} ms, "
              f"p95 {p95 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms — target p50 ≤ {TARGET_P50:.0f} s: {verdict}")
    finally:
        console.stop()
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
