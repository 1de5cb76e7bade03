"""The leader killed in the middle of a submission storm: another process takes the lead within seconds, re-attaches
the jobs the dead leader started, and no acknowledged submission is lost or launched twice.

Two shapes of one console: two consoles on one PostgreSQL database and one state folder (two ports standing for two
hosts on shared storage), and one console of two worker processes on SQLite. Clients spread the storm over every
address; the test SIGKILLs the process that leads (as `GET /api/console` names it), waits on the leader's identity
changing, and prints how long that took. Every job is a tiny CPU job that appends its pid to a file in its own work
folder, so a second launch of any job would show twice there; each launch record (its attempt) carries the epoch of
the leader that started it. And the fencing itself: a leader paused while it loses its lock's connection, resumed
after the standby took the lead, launches nothing.
"""

from __future__ import annotations

import functools
import os
import queue
import signal
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sqlalchemy import select

from tests.integration.conftest import TLS, ConsoleProcess, make_console, unique
from tests.integration.helpers import bundle
from tests.security.consoles import account, server_errors, wait_for
from tests.security.test_kill_storm import Sent
from tests.security.wire import custom_job_spec, renamed, submission

SUBMISSIONS = 200
CLIENTS = 16
FIRST_WAVE = 40  # submissions before the first leader has launched some of them
KILL_AFTER = 40  # acknowledged submissions of the second wave before the leader is killed
TAKEOVER_DEADLINE = 15.0
SCRIPT = 'echo "$$" >> starts\n'  # a launch leaves one line in the job's work folder
CONFIG: dict[str, Any] = {"capacity": {"cpu": 16}, "image_allowlist": ["nvcr.io"], "stop_grace_seconds": 2}
TERMINAL = {"succeeded", "failed", "stopped"}


def _leader(url: str, token: str) -> dict[str, Any] | None:
    try:
        answer = httpx.get(f"{url}/api/console", headers={"Authorization": f"Bearer {token}"}, timeout=2, verify=TLS)
    except httpx.TransportError:
        return None
    if answer.status_code != 200:
        return None
    leader: dict[str, Any] | None = answer.json()["leader"]
    return leader


def _started(url: str, token: str) -> int:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30, verify=TLS) as api:
        jobs = api.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]
    return sum(job["status"] in ("running", "succeeded") for job in jobs)


def _client(urls: list[str], token: str, number: int, todo: queue.SimpleQueue[Sent | None]) -> None:
    clients = [httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30, verify=TLS)
               for url in urls]
    try:
        turn = number
        while (sent := todo.get()) is not None:
            turn += 1
            headers, body = submission(sent.spec, key=sent.key, body=_bundle(sent.name))
            try:
                answer = clients[turn % len(clients)].post("/api/jobs", content=body, headers=headers)
            except httpx.TransportError as exc:  # cut off by the kill: not acknowledged (replayed below)
                sent.error = repr(exc)
                continue
            sent.status, sent.body = answer.status_code, answer.json()
    finally:
        for client in clients:
            client.close()


def _storm_and_kill(urls: list[str], token: str, ledger: list[Sent], kill: Any) -> tuple[dict[str, Any], float,
                                                                                             dict[str, Any]]:
    """Run the storm over `urls`: a first wave, until the first leader launches some of it, then the rest, calling
    `kill(leader)` once KILL_AFTER more are acknowledged; return the old leader, the takeover time, the new leader."""
    todo: queue.SimpleQueue[Sent | None] = queue.SimpleQueue()
    first, rest = ledger[:FIRST_WAVE], ledger[FIRST_WAVE:]
    for sent in first:
        todo.put(sent)

    def acknowledged() -> int:
        return sum(s.acknowledged for s in ledger)

    with ThreadPoolExecutor(CLIENTS) as pool:
        storm = [pool.submit(_client, urls, token, n, todo) for n in range(CLIENTS)]
        try:
            wait_for(lambda: acknowledged() >= FIRST_WAVE, what="the first wave", timeout=120, every=0.01)
            wait_for(lambda: _started(urls[0], token) >= 4, what="the first leader to launch jobs", timeout=120,
                     every=0.02)  # so both leaders launch some of the storm
            for sent in rest:
                todo.put(sent)
            wait_for(lambda: acknowledged() >= FIRST_WAVE + KILL_AFTER, what="the storm to reach the kill point",
                     timeout=120, every=0.002)
            old = _leader(urls[0], token)
            assert old is not None, "nobody leads"
            kill(old)
            killed_at = time.monotonic()
            at_kill = acknowledged()
            new = wait_for(lambda: next((leader for url in urls if (leader := _leader(url, token)) is not None
                                         and leader["epoch"] > old["epoch"]), None),
                           what="another process to take the lead", timeout=TAKEOVER_DEADLINE, every=0.01)
            took = time.monotonic() - killed_at
        finally:
            for _ in storm:
                todo.put(None)
            for future in storm:
                future.result()
    assert at_kill < len(ledger) and acknowledged() > at_kill, "the kill did not land mid-storm"
    return old, took, new


def _check(survivor: ConsoleProcess, user: str, token: str, ledger: list[Sent], epochs: set[int]) -> None:
    """Every acknowledged submission exists exactly once, every key replays to one job, every job ran once."""
    from starforge.console.store.models import Job, JobAttempt

    acknowledged = [s for s in ledger if s.acknowledged]
    assert len(acknowledged) >= FIRST_WAVE + KILL_AFTER and {s.status for s in acknowledged} <= {200, 202}
    with survivor.client(token) as api:
        for sent in ledger:  # replay every key, acknowledged or not, as a client retrying would
            headers, body = submission(sent.spec, key=sent.key, body=_bundle(sent.name))
            replay = api.post("/api/jobs", content=body, headers=headers)
            assert replay.status_code in (200, 202), (sent.name, replay.text)
            if sent.acknowledged:
                assert replay.json()["job_id"] == sent.body["job_id"], f"{sent.name}: its replay made another job"
        rows = api.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]
        assert Counter(r["name"] for r in rows) == Counter(s.name for s in ledger), "not exactly one job per key"

        def ended() -> dict[str, str] | None:
            jobs = api.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]
            statuses = {j["job_ref"]: j["status"] for j in jobs}
            return statuses if all(s in TERMINAL for s in statuses.values()) else None

        statuses = wait_for(ended, what="every job to end", timeout=240, every=0.25)
    assert set(statuses.values()) == {"succeeded"}, Counter(statuses.values())
    with survivor.database().read() as db:
        jobs = {job.id: (job.attempts, job.run_dir) for job in db.scalars(select(Job).where(Job.username == user))}
        launches = Counter(db.scalars(select(JobAttempt.job_id).where(JobAttempt.job_id.in_(list(jobs)))))
        launched_by = Counter(db.scalars(select(JobAttempt.epoch).where(JobAttempt.job_id.in_(list(jobs)))))
    assert len(jobs) == len(ledger)
    assert all(attempts == 1 for attempts, _run in jobs.values()), "a job was started more than once"
    assert set(launches) == set(jobs) and set(launches.values()) == {1}, "a job has more than one launch record"
    assert set(launched_by) <= epochs and len(launched_by) == 2, f"launch epochs {launched_by}, leaders {epochs}"
    for job_id, (_attempts, run_dir) in jobs.items():
        starts = (Path(run_dir) / "work" / "starts").read_text().split()
        assert len(starts) == 1, f"job {job_id} was launched {len(starts)} times"
    assert not server_errors(survivor)


def _ledger(api: httpx.Client) -> list[Sent]:
    base = custom_job_spec(api, "fo")
    names = [f"fo{n:03d}" for n in range(SUBMISSIONS)]
    for name in names:
        _bundle(name)  # packed before the storm
    return [Sent(unique("fo"), name, renamed(base, name)) for name in names]


@functools.cache
def _bundle(name: str) -> bytes:
    return bundle({f"experiments/{name}/train.sh": SCRIPT})


def test_two_consoles_on_postgres_survive_the_leaders_sigkill(tmp_path_factory: pytest.TempPathFactory) -> None:
    primary, standby = _standby_pair(tmp_path_factory)
    consoles = {"primary": primary, "standby": standby}
    try:
        user, token = account(primary, "fo")
        with primary.client(token) as api:
            ledger = _ledger(api)
        assert (_leader(standby.url, token) or {}).get("pid") == primary.proc.pid  # the first to start leads

        def kill(leader: dict[str, Any]) -> None:
            leading = next(c for c in consoles.values() if c.proc is not None and c.proc.pid == leader["pid"])
            leading.stop(kill=True)  # SIGKILL; its jobs run on in sessions of their own

        old, took, new = _storm_and_kill([primary.url, standby.url], token, ledger, kill)
        survivor = next(c for c in consoles.values() if c.proc is not None)
        assert new["pid"] == survivor.proc.pid  # type: ignore[union-attr]
        print(f"\n[postgres, two consoles] takeover {took:.2f} s after SIGKILL of pid {old['pid']} "
              f"(epoch {old['epoch']} -> {new['epoch']}, pid {new['pid']}); "
              f"{sum(s.acknowledged for s in ledger)} of {len(ledger)} acknowledged, "
              f"{sum(bool(s.error) for s in ledger)} cut off")
        _check(survivor, user, token, ledger, {old["epoch"], new["epoch"]})
    finally:
        for console in consoles.values():
            console.stop()


def test_two_workers_on_sqlite_survive_the_leading_workers_sigkill(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    console = make_console(tmp_path_factory, "sqlite", config=CONFIG, workers=2)
    console.start()
    try:
        user, token = account(console, "fo")
        with console.client(token) as api:
            ledger = _ledger(api)
        assert console.proc is not None
        workers = _children(console.proc.pid)
        assert len(workers) == 2

        def kill(leader: dict[str, Any]) -> None:
            assert leader["pid"] in workers
            os.kill(leader["pid"], signal.SIGKILL)  # the parent starts another worker

        old, took, new = _storm_and_kill([console.url], token, ledger, kill)
        assert new["pid"] != old["pid"]
        print(f"\n[sqlite, two workers] takeover {took:.2f} s after SIGKILL of worker {old['pid']} "
              f"(epoch {old['epoch']} -> {new['epoch']}, worker {new['pid']}); "
              f"{sum(s.acknowledged for s in ledger)} of {len(ledger)} acknowledged, "
              f"{sum(bool(s.error) for s in ledger)} cut off")
        _check(console, user, token, ledger, {old["epoch"], new["epoch"]})
        wait_for(lambda: len(_children(console.proc.pid)) == 2 if console.proc else False,
                 what="the parent to start another worker", timeout=30)
    finally:
        console.stop()


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found



def _standby_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[ConsoleProcess, ConsoleProcess]:
    """Return a started console on a fresh PostgreSQL database and a second one on its database and state folder."""
    primary = make_console(tmp_path_factory, "postgres", config=CONFIG, workers=1)
    primary.start()
    config = yaml.safe_load(primary.config_file.read_text())
    standby = ConsoleProcess(primary.state_dir, database_url=primary.database_url, config=config, workers=1)
    standby.log_file = primary.state_dir.parent / "standby-console.log"
    standby.admin_token = primary.admin_token
    try:
        standby.start()
    except BaseException:
        primary.stop()
        raise
    return primary, standby


def _cut_leader_connection(database_url: str) -> int:
    """End the PostgreSQL session holding the leader lock (as a network partition would); return how many."""
    import psycopg

    from starforge.console.services.leadership.locks import ADVISORY_KEY

    with psycopg.connect(database_url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        ended = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND classid = 0 AND objid = %s AND database = (SELECT oid FROM pg_database "
            "WHERE datname = current_database())", (ADVISORY_KEY,)).fetchall()
    return len(ended)


def test_a_paused_leader_that_lost_the_lead_launches_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    from starforge.console.store.models import JobAttempt

    primary, standby = _standby_pair(tmp_path_factory)
    try:
        assert primary.proc is not None
        user, token = account(standby, "paused")
        old = _leader(standby.url, token)
        assert old is not None and old["pid"] == primary.proc.pid
        os.kill(primary.proc.pid, signal.SIGSTOP)  # the leader is paused (a long GC, a frozen VM) ...
        try:
            assert _cut_leader_connection(primary.database_url) == 1  # ... and its connection is lost meanwhile
            new = wait_for(lambda: (leader := _leader(standby.url, token)) is not None
                           and leader["epoch"] > old["epoch"] and leader, what="the standby to take the lead",
                           timeout=TAKEOVER_DEADLINE, every=0.02)
            assert new["pid"] == standby.proc.pid  # type: ignore[union-attr]
            with standby.client(token) as api:
                base = custom_job_spec(api, "pz")
                sent = []
                for name in (f"pz{n}" for n in range(6)):
                    headers, body = submission(renamed(base, name), key=unique("pz"), body=_bundle(name))
                    answer = api.post("/api/jobs", content=body, headers=headers)
                    assert answer.status_code in (200, 202), answer.text
                    sent.append(answer.json()["job_id"])
        finally:
            os.kill(primary.proc.pid, signal.SIGCONT)  # it wakes up believing it leads
        wait_for(lambda: "no longer leads" in primary.log_file.read_text(errors="replace"),
                 what="the old leader to find out", timeout=30)
        with standby.client(token) as api:
            for job in sent:
                wait_for(lambda job=job: api.get("/api/job", params={"id": job}).json()["status"] in TERMINAL,
                         what=f"job {job} to end", timeout=120)
                assert api.get("/api/job", params={"id": job}).json()["status"] == "succeeded"
        with standby.database().read() as db:
            epochs = list(db.scalars(select(JobAttempt.epoch).where(JobAttempt.job_id.in_(sent))))
        assert sorted(epochs) == [new["epoch"]] * len(sent), "a job was launched by the leader that lost the lead"
        for job in sent:
            run = standby.state_dir / "runs" / user
            (starts,) = run.glob(f"*/{job}/work/starts")
            assert len(starts.read_text().split()) == 1
        assert (_leader(primary.url, token) or {}).get("epoch") == new["epoch"]  # it serves on, as a standby
    finally:
        standby.stop()
        primary.stop()
