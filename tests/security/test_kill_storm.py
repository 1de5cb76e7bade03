"""SIGKILL in the middle of a submission storm: after a restart on the same state every acknowledged submission
exists exactly once, and replaying any key (acknowledged or not) never makes a second job."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.integration.conftest import BACKENDS, unique
from tests.integration.helpers import spec_for
from tests.security.consoles import Launcher, account, server_errors, wait_for
from tests.security.wire import renamed, submission

CLIENTS = 24
KILL_AFTER = 100      # acknowledged submissions before the SIGKILL
PER_CLIENT = 100      # a bound: the storm never outlives the kill by more than this


@dataclass
class Sent:
    """One submission of the storm: its key and experiment, and what came back (if anything)."""

    key: str
    name: str
    spec: dict[str, Any]
    status: int | None = None
    body: dict[str, Any] = field(default_factory=dict)
    error: str = ""

    @property
    def acknowledged(self) -> bool:
        """Return True when the client received a 2xx answer."""
        return self.status is not None and 200 <= self.status < 300


def _storm(url: str, token: str, spec: dict[str, Any], client_no: int, ledger: list[Sent], lock: threading.Lock,
           done: threading.Event) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        for i in range(PER_CLIENT):
            if done.is_set():
                return
            name = f"c{client_no:02d}n{i:03d}"
            sent = Sent(unique("storm"), name, renamed(spec, name))
            with lock:
                ledger.append(sent)
            headers, body = submission(sent.spec, key=sent.key)
            try:
                response = http.post("/api/jobs", content=body, headers=headers)
            except httpx.TransportError as exc:  # the console is gone: this client stops
                sent.error = repr(exc)
                return
            sent.status, sent.body = response.status_code, response.json()


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigkill_mid_storm_loses_and_doubles_nothing(launch: Launcher, backend: str) -> None:
    console = launch(backend, {"capacity": {"cpu": 2}})  # h200 jobs: admitted as pending, never launched
    user, token = account(console, "storm")
    with console.client(token) as api:
        spec = spec_for(api, series="h200", gpus=8)
    ledger: list[Sent] = []
    lock, done = threading.Lock(), threading.Event()

    with ThreadPoolExecutor(CLIENTS) as pool:
        storm = [pool.submit(_storm, console.url, token, spec, n, ledger, lock, done) for n in range(CLIENTS)]
        try:
            wait_for(lambda: sum(s.acknowledged for s in list(ledger)) >= KILL_AFTER or all(f.done() for f in storm),
                     what="the storm to reach the kill point", timeout=120, every=0.005)
            console.stop(kill=True)  # SIGKILL while requests are in flight
        finally:
            done.set()
            for future in storm:
                future.result()

    statuses = Counter(s.status for s in ledger if s.status is not None)
    acknowledged = [s for s in ledger if s.acknowledged]
    assert set(statuses) == {202}, f"the storm got other answers than 202 (pending): {statuses}"
    assert len(acknowledged) >= KILL_AFTER and any(s.error for s in ledger), "the kill did not land mid-storm"

    console.start()
    with console.client(token) as api:
        rows = api.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]
        by_name = Counter(r["name"] for r in rows)
        assert not [n for n, c in by_name.items() if c > 1], "a submission exists twice after the restart"
        for sent in acknowledged:
            job = sent.body["job_id"]
            shown = api.get("/api/job", params={"id": job})
            assert shown.status_code == 200, (sent.name, job, shown.text)
            assert shown.json()["name"] == sent.name and shown.json()["owner"] == user
            assert api.get(f"/api/jobs/{job}/jobspec").status_code == 200
        committed = {r["name"]: r["job_ref"] for r in rows}
        lost_answers = [s for s in ledger if not s.acknowledged and s.name in committed]

        for sent in ledger:  # replay every key, acknowledged or not, exactly as the client would retry
            headers, body = submission(sent.spec, key=sent.key)
            replay = api.post("/api/jobs", content=body, headers=headers)
            assert (replay.status_code, replay.json()["status"]) == (202, "pending"), (sent.name, replay.text)
            if sent.acknowledged:
                assert (replay.status_code, replay.json()) == (sent.status, sent.body), sent.name
            if sent.name in committed:
                assert replay.json()["job_id"] == committed[sent.name], f"{sent.name}: replay made a second job"

        rows = api.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]
        assert Counter(r["name"] for r in rows) == Counter(s.name for s in ledger), "not exactly one job per key"
    assert not server_errors(console)
    print(f"\n[{backend}] storm: {len(ledger)} sent, {len(acknowledged)} acknowledged before SIGKILL, "
          f"{sum(bool(s.error) for s in ledger)} cut off, {len(lost_answers)} committed but unacknowledged")
