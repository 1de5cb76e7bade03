"""`GET /metrics` over HTTP on a real console: refused anonymously (401) and to an ordinary user (403), answered to
an administrator and to a scrape token in Prometheus' text format with the right values after a few submissions
(one placed, one waiting, one rejected), clean for `promtool check metrics`, and scraped by a real Prometheus.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from starforge.console.operator import create_scrape_token
from tests.conftest import require_service
from tests.integration.conftest import DEFAULT_CONFIG, ConsoleProcess, free_port, make_console, unique
from tests.integration.helpers import admitted, spec_for, submit

HOW = "run `scripts/services.sh up` (installs Debian's prometheus, which brings promtool)"


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    proc = make_console(tmp_path_factory, "sqlite", config={**DEFAULT_CONFIG, "capacity": {"cpu": 1}})
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def scrape_token(console: ConsoleProcess) -> str:
    return create_scrape_token(console.database(), "admin")


@pytest.fixture(scope="module")
def submitted(console: ConsoleProcess) -> dict[str, Any]:
    """One job placed on the cpu series, one waiting on h200 (no capacity there), one rejected: its problem code."""
    user = unique("metrics")
    with console.client(console.token_for(user)) as api:
        placed = admitted(submit(api, spec_for(api, series="cpu")))
        waiting = admitted(submit(api, spec_for(api, series="h200")), "pending")
        bad = spec_for(api, series="cpu")
        bad["spec"]["recipe"]["version"] = "99.0.0"
        refused = submit(api, bad)
    assert refused.status_code >= 400, refused.text
    return {"user": user, "placed": placed, "waiting": waiting, "code": refused.json()["problems"][0]["code"]}


def _scrape(console: ConsoleProcess, token: str) -> httpx.Response:
    with httpx.Client(base_url=console.url, timeout=30) as http:
        return http.get("/metrics", headers={"Authorization": f"Bearer {token}"})


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_refuse_anonymous_callers_users_and_web_sessions(console: ConsoleProcess) -> None:
    with httpx.Client(base_url=console.url, timeout=30) as http:
        anonymous = http.get("/metrics")
    assert anonymous.status_code == 401 and anonymous.json()["detail"]
    assert _scrape(console, "sfw_not-a-session").status_code == 401
    user = _scrape(console, console.token_for(unique("plain")))
    assert user.status_code == 403 and "administrators" in user.json()["detail"]


def test_a_scrape_token_reads_metrics_only(console: ConsoleProcess, scrape_token: str) -> None:
    assert scrape_token.startswith("sfm_")
    assert _scrape(console, scrape_token).status_code == 200
    with console.client(scrape_token) as api:
        assert api.get("/api/whoami").status_code == 401  # never an API token
    made = console.sf("token", "create", "--scrape", "--user", "admin", check=True).stdout.strip()
    assert made.startswith("sfm_") and _scrape(console, made).status_code == 200


def test_families_hold_the_submissions(console: ConsoleProcess, submitted: dict[str, Any]) -> None:
    answer = _scrape(console, console.admin_token)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = _samples(answer.text)
    names = {name for name, _labels in samples}
    for family in ("starforge_jobs", "starforge_queue_jobs", "starforge_queue_oldest_wait_seconds",
                   "starforge_capacity_gpus", "starforge_placed_gpus", "starforge_admission_decisions_total",
                   "starforge_admission_rejections_total", "starforge_submission_duration_seconds_count",
                   "starforge_scheduler_cycle_duration_seconds_count", "starforge_cache_size_bytes",
                   "starforge_console_info", "starforge_leader_info"):
        assert family in names, family
    assert _value(samples, "starforge_jobs", status="pending", series="h200") == 1
    assert _value(samples, "starforge_queue_jobs", series="h200") == 1
    assert _value(samples, "starforge_queue_oldest_wait_seconds", series="h200") >= 0
    assert _value(samples, "starforge_queue_jobs", series="cpu") == 0
    assert _value(samples, "starforge_capacity_gpus", series="cpu") == 1
    cpu_jobs = sum(v for (name, labels), v in samples.items() if name == "starforge_jobs" and ("series", "cpu") in labels)
    assert cpu_jobs == 1  # placed (submitted, preparing or running) or already finished
    assert _value(samples, "starforge_admission_decisions_total", source="submit", verdict="rejected") == 1
    assert _value(samples, "starforge_admission_decisions_total", source="submit", verdict="accepted") \
        + _value(samples, "starforge_admission_decisions_total", source="submit", verdict="queued") == 2
    assert _value(samples, "starforge_admission_rejections_total", source="submit", code=submitted["code"]) == 1
    assert sum(v for (name, _l), v in samples.items() if name == "starforge_submission_duration_seconds_count") == 3
    assert _value(samples, "starforge_submission_duration_seconds_count", outcome="rejected") == 1
    assert sum(v for (name, _l), v in samples.items() if name == "starforge_scheduler_cycle_duration_seconds_count") >= 1
    leader = [dict(labels) for name, labels in samples if name == "starforge_leader_info"]
    assert len(leader) == 1 and leader[0]["console_id"] and leader[0]["pid"].isdigit()


def test_promtool_finds_nothing_to_say(console: ConsoleProcess, submitted: dict[str, Any]) -> None:
    promtool = require_service("promtool", "STARFORGE_PROMTOOL", HOW)
    text = _scrape(console, console.admin_token).text
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and not checked.stdout.strip() and not checked.stderr.strip(), (
        checked.stdout, checked.stderr)


def _query(http: httpx.Client, query: str) -> list[dict[str, Any]]:
    try:
        answer = http.get("/api/v1/query", params={"query": query})
    except httpx.HTTPError:
        return []  # not listening yet
    if answer.status_code != 200:
        return []
    result: list[dict[str, Any]] = answer.json()["data"]["result"]
    return result


def test_a_real_prometheus_scrapes_the_console(console: ConsoleProcess, scrape_token: str,
                                               submitted: dict[str, Any], tmp_path: Path) -> None:
    server = require_service("Prometheus", "STARFORGE_PROMETHEUS", HOW)
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{
            "job_name": "starforge", "scrape_interval": "1s", "metrics_path": "/metrics",
            "authorization": {"credentials": scrape_token},
            "static_configs": [{"targets": [console.url.removeprefix("http://")]}],
        }],
    }), encoding="utf-8")
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen([server, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        up: list[dict[str, Any]] = []
        waiting: list[dict[str, Any]] = []
        deadline = time.monotonic() + 90
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
            while time.monotonic() < deadline and proc.poll() is None:
                up = _query(http, 'up{job="starforge"}')
                waiting = _query(http, 'starforge_queue_jobs{series="h200"}')
                if up and up[0]["value"][1] == "1" and waiting:
                    break
                time.sleep(0.2)  # polling Prometheus' answer with a deadline: it scrapes every second
        assert up and up[0]["value"][1] == "1", (up, (tmp_path / "prometheus.log").read_text()[-2000:])
        assert waiting and waiting[0]["value"][1] == "1", waiting
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
