"""Benchmark: SSE delivery latency of a running job's live log while the console takes a submission storm (issue
[5], target p99 ≤ 250 ms). A `custom/custom` job whose `train.sh` sleeps is running; a listener follows its log on
`/api/job/logs/stream` while `hey` (a separate process) posts 20 KB bundles to `/api/jobs` with 16 clients, as
bench/submit.py does, for a series with no capacity so that the submitted jobs wait and nothing else runs. After the
storm has run for a second, 200 probe lines, one every 20 ms, are posted through `/api/ingest/logs`; each probe
carries its send time and its latency is taken when the listener reads it. The storm stops once every probe has
arrived. Every submission of the storm must be answered 2xx and every probe delivered.
"""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._console import start_console  # noqa: E402
from bench._load import Load, _ms, record, require_hey, table  # noqa: E402
from bench.log_stream import _run_token  # noqa: E402
from bench.submit import _bundle_20k  # noqa: E402
from tests.integration.helpers import bundle, spec_for, submit  # noqa: E402

TARGET_P99_MS = 250.0
CLIENTS = 16
PROBES = 200
PROBE_EVERY = 0.020  # seconds between probes
STORM_LEAD = 1.0  # seconds of storm before the first probe
STORM_CAP = 40  # seconds: hey's own limit, in case the probes never arrive
CONFIG = {"capacity": {"cpu": 2}, "image_allowlist": ["nvcr.io"],
          "quota": {"max_concurrent_jobs": 1_000_000, "max_concurrent_gpus": 1_000_000}}


class Listener:
    """Follow a job's live log over SSE and keep the delivery latency (seconds) of each `probe <time>` line."""

    def __init__(self, url: str, job: str, headers: httpx.Headers) -> None:
        self.url, self.job, self.headers = url, job, headers
        self.latencies: list[float] = []
        self.ready = threading.Event()
        self.done = threading.Event()
        self.error = ""

    def run(self) -> None:
        """Read the stream until `PROBES` probes have arrived (or the stream fails)."""
        try:
            with httpx.stream("GET", f"{self.url}/api/job/logs/stream", params={"id": self.job, "tail": 1},
                              headers=self.headers, timeout=None) as response:
                self.ready.set()
                for text in response.iter_lines():
                    if text.startswith("data: probe "):
                        self.latencies.append(time.time() - float(text.split()[2]))
                        if len(self.latencies) >= PROBES:
                            break
        except httpx.HTTPError as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.ready.set()
            self.done.set()


def _start_log_job(console: Any, api: httpx.Client) -> str:
    """Submit a cpu job whose train.sh sleeps, wait until it runs, and return its id."""
    spec = spec_for(api, "custom/custom", exp="experiments/logs")
    spec["spec"]["framework"].update(image="nvcr.io/t/t:1", observability_url="https://example.com/x")
    answer = submit(api, spec, data=bundle({"experiments/logs/train.sh": "sleep 300\n"}))
    assert answer.status_code < 300, answer.text
    job: str = answer.json()["job_id"]
    deadline = time.monotonic() + 30
    while (status := api.get("/api/job", params={"id": job}).json()["status"]) != "running":
        if time.monotonic() > deadline:
            raise RuntimeError(f"the log job did not start: {status}")
        time.sleep(0.05)
    return job


def _storm_argv(console: Any, api: httpx.Client, token: str, workdir: Path) -> list[str]:
    """Return hey's argv for 16 clients posting 20 KB bundles for series h200 (checked once by hand first)."""
    data = _bundle_20k()
    spec = spec_for(api, "tinyrl/grpo", exp="experiments/bench", series="h200")
    first = submit(api, spec, data=data, profile="h200")
    assert first.status_code < 300, first.text
    meta = {"exp": "experiments/bench", "profile": "h200", "git_commit": "3f2a9c1", "git_dirty": False,
            "config_sha": "none", "spec": spec}
    body = workdir / "bundle.tar.gz"
    body.write_bytes(data)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/gzip",
               "X-Forge-Meta": json.dumps(meta, ensure_ascii=True)}
    argv = [require_hey(), "-z", f"{STORM_CAP}s", "-c", str(CLIENTS), "-m", "POST", "-D", str(body)]
    for key, value in headers.items():
        argv += ["-H", f"{key}: {value}"]
    return [*argv, f"{console.url}/api/jobs"]


def _parse(report: str) -> tuple[Load, dict[str, int]]:
    """Return what hey measured and its error distribution (transport errors, message → count)."""
    rps = re.search(r"Requests/sec:\s+([0-9.]+)", report)
    statuses = {code: int(n) for code, n in re.findall(r"\[(\d{3})\]\s+(\d+) responses", report)}
    errors: dict[str, int] = {}
    if "Error distribution:" in report:
        for n, message in re.findall(r"^\s*\[(\d+)\]\s+(.+)$", report.split("Error distribution:", 1)[1], re.M):
            errors[message.strip()] = int(n)
    load = Load(float(rps.group(1)) if rps else 0.0, _ms(report, 50), _ms(report, 99), statuses)
    return load, errors


def _probe(ingest: httpx.Client, job: str, storm: subprocess.Popen[str]) -> int:
    """Post `PROBES` probe lines on a 20 ms schedule; return how many were sent while the storm still ran."""
    during = 0
    start = time.perf_counter()
    for i in range(PROBES):
        delay = start + i * PROBE_EVERY - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        answer = ingest.post("/logs", json={"run_id": job, "chunks": [f"probe {time.time():.6f}\n"]})
        assert answer.status_code == 200, answer.text
        during += storm.poll() is None
    return during


def _console_errors(console: Any) -> str:
    """Return the last error lines of the console's log (shown only when the figure fails)."""
    lines = Path(console.log_file).read_text(errors="replace").splitlines()
    wanted = [line for line in lines if re.search(r"error|exception|traceback", line, re.I)]
    return "\n".join(wanted[-15:])


def main() -> int:
    console, tmp = start_console(CONFIG)
    try:
        token = console.token_for("bench")
        api = console.client(token)
        job = _start_log_job(console, api)
        ingest = httpx.Client(base_url=f"{console.url}/api/ingest",
                              headers={"X-StarForge-Token": _run_token(console, job)}, timeout=60)
        argv = _storm_argv(console, api, token, Path(tempfile.mkdtemp(dir=tmp.name)))

        listener = Listener(console.url, job, api.headers)
        threading.Thread(target=listener.run, daemon=True).start()
        listener.ready.wait(10)
        time.sleep(0.3)

        storm = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(STORM_LEAD)
            during = _probe(ingest, job, storm)
            listener.done.wait(30)
        finally:
            if storm.poll() is None:
                storm.send_signal(signal.SIGINT)  # hey stops and prints its report
            report, stderr = storm.communicate(timeout=60)
        load, transport = _parse(report)
        console_errors = _console_errors(console) if load.total - load.ok or transport else ""
        api.post("/api/job/stop", params={"id": job})
    finally:
        console.stop()
        tmp.cleanup()

    if storm.returncode != 0 or not load.total:
        print(f"hey failed (exit {storm.returncode}): {stderr.strip() or report.strip()}", file=sys.stderr)
        return 1
    latencies = sorted(listener.latencies)
    p50 = statistics.median(latencies) * 1000 if latencies else float("nan")
    p99 = latencies[int(0.99 * (len(latencies) - 1))] * 1000 if latencies else float("nan")
    failed = load.total - load.ok + sum(transport.values())
    missing = PROBES - len(latencies)
    meets = p99 <= TARGET_P99_MS and not failed and not missing and during == PROBES
    measured = f"p50 {p50:.0f} ms p99 {p99:.0f} ms (storm: {load.rps:,.0f} submissions/s)"
    if failed:
        measured += f" ({failed} non-2xx)"
    if missing:
        measured += f" ({missing} probes lost)"
    table([(f"SSE delivery during a submission storm ({CLIENTS} clients)", f"p99 ≤ {TARGET_P99_MS:.0f} ms",
            measured, meets)])
    if failed:
        print(f"storm answers: {load.statuses}" + (f", transport errors: {transport}" if transport else ""))
        print(f"console errors:\n{console_errors}")
    if listener.error:
        print(f"SSE listener: {listener.error}")
    if during < PROBES:
        print(f"only {during} of {PROBES} probes were sent while the storm ran")
    record({"sse_delivery_during_submit_storm": {
        "p50_ms": round(p50, 1), "p99_ms": round(p99, 1), "storm_rps": round(load.rps, 1),
        "storm_submissions": load.total, "non_2xx": failed, "probes_delivered": len(latencies),
        "target": f"p99 ≤ {TARGET_P99_MS:.0f} ms", "meets": meets, "command": "python bench/sse_storm.py"}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
