"""The single process's guarantees with two worker processes on one state folder: each worker answers and exactly
one leads; the quota race admits exactly the quota, one Idempotency-Key makes one job, the honest queue refuses and
admits as before, maintenance turned on through one worker holds in the other, a sign-in guesser meets one limit
and `/metrics` through either worker counts the whole console.

The suites' own checks run here on a console of two workers (their sizes cut where the whole suite would take long);
`STARFORGE_TEST_WORKERS=2` runs every suite that way. The leader's SIGKILL mid-storm is test_leader_failover.py's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from starforge.console.services.throttle import Limits
from tests.integration import test_honest_queue as honest
from tests.integration.conftest import BACKENDS, TLS, ConsoleProcess, make_console, unique
from tests.integration.helpers import spec_for
from tests.integration.test_cli_account import sf, token_login
from tests.security import test_idempotency_restart as idempotency
from tests.security import test_quota_race as quota_race
from tests.security.consoles import Launcher, account, server_errors
from tests.security.wire import submission

WORKERS = 2


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    """Two workers, CPU only, `admission.unplaceable: refuse` (as test_honest_queue.py's console)."""
    proc = make_console(tmp_path_factory, "sqlite", config={"capacity": {"cpu": 2},
                                                            "admission": {"unplaceable": "refuse"}}, workers=WORKERS)
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def queueing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    """Two workers, CPU only, jobs of other series waiting as `pending` (the suites' default)."""
    proc = make_console(tmp_path_factory, "sqlite", config={"capacity": {"cpu": 2}}, workers=WORKERS)
    proc.start()
    yield proc
    proc.stop()


def _each_worker(console: ConsoleProcess, token: str) -> dict[int, httpx.Client]:
    """Return one open client per worker process (new connections until both answered; each stays on its worker)."""
    clients: dict[int, httpx.Client] = {}
    for _ in range(200):
        client = httpx.Client(base_url=console.url, headers={"Authorization": f"Bearer {token}"}, timeout=30,
                              verify=TLS)
        pid = client.get("/api/console").json()["this"]["pid"]
        if pid in clients:
            client.close()
        else:
            clients[pid] = client
        if len(clients) == WORKERS:
            return clients
    raise AssertionError(f"only {len(clients)} worker(s) answered 200 new connections")


def test_each_worker_answers_and_exactly_one_leads(queueing: ConsoleProcess) -> None:
    clients = _each_worker(queueing, queueing.admin_token)
    try:
        seen = {pid: client.get("/api/console").json() for pid, client in clients.items()}
    finally:
        for client in clients.values():
            client.close()
    leaders = {(s["leader"]["pid"], s["leader"]["epoch"]) for s in seen.values()}
    assert len(leaders) == 1 and next(iter(leaders))[0] in seen
    assert sorted(s["this"]["leads"] for s in seen.values()) == [False, True]
    assert len({s["this"]["console_id"] for s in seen.values()}) == 1  # one console, one state folder


def test_sf_console_status_names_the_leader(queueing: ConsoleProcess, forge_home: Path) -> None:
    token_login(queueing, forge_home, unique("st"))
    shown = sf("console", "status", "--json", home=forge_home)
    assert shown.returncode == 0, shown.stderr
    state = json.loads(shown.stdout)
    assert state["leader"]["epoch"] >= 1 and state["this"]["console_id"] == state["leader"]["console_id"]
    text = sf("console", "status", home=forge_home)
    assert f"leader: pid {state['leader']['pid']} on {state['leader']['host']}" in text.stdout, text.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_quota_race_admits_exactly_the_quota(tmp_path_factory: pytest.TempPathFactory,
                                                 monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    monkeypatch.setattr(quota_race, "RACERS", 150)
    launcher = Launcher(tmp_path_factory, workers=WORKERS)
    try:
        quota_race.test_500_concurrent_submissions_admit_exactly_the_quota(launcher, backend)
    finally:
        launcher.close()


def test_one_idempotency_key_makes_one_job(queueing: ConsoleProcess) -> None:
    idempotency.test_concurrent_requests_with_one_key_make_one_job(queueing)


def test_the_honest_queue_refuses_and_admits_as_one_process_does(strict: ConsoleProcess) -> None:
    honest.test_a_series_without_capacity_is_refused_with_its_field_and_a_hint(strict)
    honest.test_allow_pending_admits_a_job_that_waits_with_its_reason_and_place(strict)


def test_maintenance_turned_on_through_one_worker_holds_in_the_other(queueing: ConsoleProcess) -> None:
    token = account(queueing, "maint")[1]
    admins = _each_worker(queueing, queueing.admin_token)
    users = _each_worker(queueing, token)
    first, second = sorted(admins)
    spec = spec_for(users[first], series="h200", gpus=8)
    try:
        assert admins[first].post("/api/admin/maintenance/drain", json={"note": "moving racks"}).status_code == 200
        for pid, client in users.items():
            headers, body = submission(spec, key=unique("m"))
            refused = client.post("/api/jobs", content=body, headers=headers)
            assert refused.status_code == 503 and "moving racks" in refused.text, (pid, refused.text)
        assert admins[second].post("/api/admin/maintenance/resume").status_code == 200
        for pid, client in users.items():
            headers, body = submission(spec, key=unique("m"))
            assert client.post("/api/jobs", content=body, headers=headers).status_code == 202, pid
    finally:
        for client in (*admins.values(), *users.values()):
            client.close()
    assert not server_errors(queueing)


def test_failed_sign_ins_spread_over_the_workers_meet_one_limit(
        queueing: ConsoleProcess) -> None:
    free = Limits().sign_in.free  # what one process allows an address before it must wait
    clients = list(_each_worker(queueing, queueing.admin_token).values())
    try:
        answers = [clients[n % WORKERS].post("/ui/signin", data={"token": "sfp_guess"}).status_code
                   for n in range(2 * free)]  # a guesser alternating between the two processes
    finally:
        for client in clients:
            client.close()
    assert set(answers) == {401, 429}, answers
    # one allowance for both: its free failures, the one that starts the wait, and one per wait (1 s, 2 s) a slow
    # machine may have let pass meanwhile; a limit per process would have let every one of the 2 x free through
    assert answers.count(401) <= free + 3, answers


def _submission_count(client: httpx.Client) -> tuple[float, float]:
    """The submissions and scheduler cycles `/metrics` reports through this client's worker."""
    answer = client.get("/metrics")
    assert answer.status_code == 200, answer.text
    samples = [s for family in text_string_to_metric_families(answer.text) for s in family.samples]
    return (sum(s.value for s in samples if s.name == "starforge_submission_duration_seconds_count"),
            sum(s.value for s in samples if s.name == "starforge_scheduler_cycle_duration_seconds_count"))


def test_metrics_through_either_worker_count_the_whole_console(queueing: ConsoleProcess) -> None:
    admins = _each_worker(queueing, queueing.admin_token)
    users = _each_worker(queueing, account(queueing, "metrics")[1])
    try:
        before = {pid: _submission_count(client) for pid, client in admins.items()}
        spec = spec_for(next(iter(users.values())), series="h200", gpus=8)
        for client in (*users.values(), *users.values()):  # two through each worker
            headers, body = submission(spec, key=unique("mx"))
            assert client.post("/api/jobs", content=body, headers=headers).status_code == 202
        after = {pid: _submission_count(client) for pid, client in admins.items()}
    finally:
        for client in (*admins.values(), *users.values()):
            client.close()
    (first, counts), (second, others) = sorted(after.items())
    assert counts[0] == others[0] == max(b[0] for b in before.values()) + 4, (before, after)
    assert counts[1] >= 1 and others[1] >= 1  # the leader's cycles, reported by the worker that does not lead too
