"""Group commit of submissions: one writer thread commits every admitted submission waiting for it in one
transaction, and answers each caller only once that transaction has committed.

A batch takes the capacity lock once, reads usage once (`capacity.take_snapshot`), the quotas of its accounts once
and their stored Idempotency-Keys once, inserts its rows with one statement per table, and commits once: the
per-transaction cost is paid per batch, not per job. The rows are built by the same functions every other path uses
(`jobs.build_job`, `jobs.status_event`, `audit.decision_row`).
Decisions inside a batch are those of one-at-a-time commits in arrival order: each books itself into the snapshot
(`assume` when it fits, `block` when it waits for capacity) exactly as the next commit would have read it back. A
repeated Idempotency-Key gets the answer stored for it, from the store or from an earlier submission of the same
batch. If a batch fails as a whole, each of its submissions is committed again on its own, so one bad submission
never takes the others with it; a caller whose own commit failed gets that error. A console killed mid-batch has
answered none of that batch's callers, so no acknowledged submission is lost.
A submission naming a sweep (`meta.sweep_id`) joins that sweep of its account, the sweep being made on first sight
(`sweep_rows`; sweep ids are per account), and is decided under that sweep's parallel limit.
The daily GPU-hour budget is checked again here, on the ledgers read inside the lock (`budget.ledgers`), each
submission charged in arrival order: admission read its ledger outside the lock, so concurrent submissions can never
both take the last hours — one that no longer fits is refused exactly as admission would have refused it (400, at
`quota`; audited) and stores nothing else.
`commit_group` commits the points of one `POST /api/sweeps` together, in one transaction of their own (a point that
no longer fits the budget refuses the whole group: `GroupRefused`).
Each job is placed by `capacity.place`, the scheduler's placement step; the admitted JobSpec of each job written is
handed to this console's scheduler (`handover`), which launches it without parsing the stored spec again.

Tier: use case (the writer owns its transactions).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import Table, insert, select
from sqlalchemy.orm import Session

from ....contract import JobSpec, Problem, render_problems
from ...settings import Settings
from ...store import Database
from ...store.models import Admission, Idempotency, Job, JobEvent
from ..accounts.credentials import UserView
from ..admission import Decision
from ..audit import decision_row
from ..outcome import Outcome
from ..quota.budget import ledgers
from ..quota.capacity import Fit, Snapshot, demand_of, place, take_snapshot
from ..quota.caps import QuotaView, quotas_for
from ..quota.policy import Ledger, budget_refusal, queue_priority, reserved_hours
from ..registries import benchmark_packs
from ..sweeps.rows import claim_sweeps, sweep_id_of
from .handover import Handover
from .rows import build_job, status_event

__all__ = ["Admitted", "GroupRefused", "SubmissionWriter"]

log = logging.getLogger("starforge.submissions")
MAX_BATCH = 256  # submissions in one transaction: enough to absorb any burst, small enough to answer quickly
_INSERT: dict[type, Any] = {model: insert(cast(Table, model.__table__))
                            for model in (Job, JobEvent, Admission, Idempotency)}


@dataclass
class Admitted:
    """An admitted submission waiting for its commit, and then its answer (or the error of its commit)."""

    user: UserView
    spec: JobSpec
    decision: Decision
    exp: str
    profile: str
    meta: dict[str, Any]
    package_sha: str
    idempotency_key: str | None
    outcome: Outcome | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class GroupRefused(Exception):
    """Raised by `commit_group` when one of its items no longer fits the daily budget (nothing was stored)."""

    def __init__(self, index: int, problem: Problem) -> None:
        super().__init__(problem.message)
        self.index = index
        self.problem = problem


class SubmissionWriter:
    """The one thread that commits submissions, in batches."""

    def __init__(self, *, db: Database, settings: Settings, capacity: Mapping[str, int],
                 wake: Callable[..., None]) -> None:
        """Commit into `db` under `settings`' quota rules on `capacity` (slots per series); `wake(place=False)` asks
        the background loops to launch what a batch admitted straight to `submitted`."""
        self._db = db
        self._settings = settings
        self._capacity = capacity
        self._wake = wake
        self._queue: queue.SimpleQueue[Admitted] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.handover = Handover()  # the admitted specs of the jobs written, for this console's scheduler

    def commit(self, item: Admitted) -> Outcome:
        """Queue `item` for the next batch and return its answer once that batch has committed (blocking)."""
        self._ensure_started()
        self._queue.put(item)
        item.done.wait()
        if item.error is not None:
            raise item.error
        assert item.outcome is not None
        return item.outcome

    def _ensure_started(self) -> None:
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="starforge-submissions", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self.commit_batch(batch)

    def commit_batch(self, batch: list[Admitted]) -> None:
        """Commit `batch` in one transaction — each submission alone if that fails — and answer every caller (the
        writer thread's step; blocking)."""
        try:
            outcomes = self._write(batch)
        except BaseException as exc:
            if len(batch) == 1:
                batch[0].error = exc
                batch[0].done.set()
                return
            log.warning("a batch of %d submissions failed (%s); committing each on its own", len(batch), exc)
            for item in batch:
                self.commit_batch([item])
            return
        for item, outcome in zip(batch, outcomes, strict=True):
            item.outcome = outcome
            item.done.set()
        if any(outcome.status_code == 200 for outcome in outcomes):
            self._wake(place=False)  # jobs admitted straight to `submitted`: launch them

    def commit_group(self, items: list[Admitted], prepare: Callable[[Session], None] | None = None) -> list[Outcome]:
        """Commit `items` together in one transaction, on the caller's thread (all or none; an error is raised), and
        return their answers in order; `prepare` runs first in that transaction (a sweep adds its row there). Raises
        GroupRefused, storing nothing, when an item no longer fits the daily budget. Blocking: call it in the
        threadpool."""
        outcomes = self._write(items, prepare, whole=True)
        if any(outcome.status_code == 200 for outcome in outcomes):
            self._wake(place=False)
        return outcomes

    def _write(self, batch: list[Admitted], prepare: Callable[[Session], None] | None = None, *,
               whole: bool = False) -> list[Outcome]:
        with self._db.write() as db:
            self._db.lock_capacity(db)
            if prepare is not None:
                prepare(db)
            sweeps = claim_sweeps(db, [(item.user.id, sweep_id_of(item.meta), item.exp, item.profile)
                                       for item in batch])
            answered = _stored_answers(db, batch)
            quotas = quotas_for(db, {item.user.id for item in batch}, self._settings.quota)
            books = ledgers(db, quotas, self._settings.profile_max_hours, waiting=True)
            snap = take_snapshot(db, self._capacity)
            rows = _Rows()
            outcomes = []
            for index, item in enumerate(batch):
                key = (item.user.id, item.idempotency_key) if item.idempotency_key else None
                if key is not None and key in answered:
                    outcomes.append(answered[key])
                    continue
                quota = quotas[item.user.id]
                refused = _charge(books, quota, item, self._settings.profile_max_hours)
                if refused is not None and whole:
                    raise GroupRefused(index, refused)
                if refused is not None:
                    outcome = _refusal(rows, item, refused)
                else:
                    sweep = sweeps.get((item.user.id, sweep_id_of(item.meta)))
                    outcome = _decide_one(rows, snap, quota, item, sweep.max_parallel if sweep else 0)
                if key is not None:
                    answered[key] = outcome
                    rows.add(Idempotency(user_id=item.user.id, key=item.idempotency_key,
                                         status_code=outcome.status_code, response_json=json.dumps(outcome.body),
                                         created_at=time.time()))
                outcomes.append(outcome)
            rows.insert(db)
        self.handover.offer(rows.specs)  # committed: the scheduler may claim them now
        return outcomes


class _Rows:
    """The rows a batch adds, inserted at the end with one statement per table and column set (the ORM's unit of
    work costs more than the whole SQLite transaction)."""

    def __init__(self) -> None:
        self._rows: dict[tuple[type, tuple[str, ...]], list[dict[str, Any]]] = {}
        self.specs: list[tuple[str, JobSpec]] = []  # each job written, with its admitted spec

    def add(self, row: Any) -> None:
        values = {key: value for key, value in vars(row).items() if not key.startswith("_sa_")}
        self._rows.setdefault((type(row), tuple(sorted(values))), []).append(values)

    def insert(self, db: Session) -> None:
        connection = db.connection()  # Core statements: the rows are complete, no ORM bookkeeping is wanted
        for model in (Job, JobEvent, Admission, Idempotency):  # parents first
            for (kind, _keys), values in self._rows.items():
                if kind is model:
                    connection.execute(_INSERT[model], values)


def _stored_answers(db: Session, batch: list[Admitted]) -> dict[tuple[int, str], Outcome]:
    keys = {(item.user.id, item.idempotency_key) for item in batch if item.idempotency_key}
    if not keys:
        return {}
    rows = db.scalars(select(Idempotency).where(Idempotency.user_id.in_({user for user, _ in keys}),
                                                Idempotency.key.in_({key for _, key in keys})))
    return {(row.user_id, row.key): Outcome(row.status_code, json.loads(row.response_json))
            for row in rows if (row.user_id, row.key) in keys}


def _charge(books: dict[int, Ledger], quota: QuotaView, item: Admitted,
            profile_max_hours: dict[str, float]) -> Problem | None:
    """Charge `item`'s reserved GPU hours to its account's ledger, or return the problem when they no longer fit."""
    ledger = books.get(item.user.id)
    if ledger is None:
        return None
    gpus = item.spec.total_gpus
    hours = reserved_hours(gpus=gpus, profile=item.profile, quota=quota, profile_max_hours=profile_max_hours)
    refused = budget_refusal(ledger, hours=hours, gpus=gpus)
    if refused is None:
        books[item.user.id] = ledger.charged(hours)
    return refused


def _refusal(rows: _Rows, item: Admitted, problem: Problem) -> Outcome:
    """Return the answer to a submission the budget refuses at commit, as admission answers it, and audit it."""
    warnings = item.decision.warnings
    rows.add(decision_row(user_id=item.user.id, source="submit", verdict="rejected", exp=item.exp,
                          recipe=item.spec.spec.recipe.name, problems=[problem], warnings=warnings))
    body: dict[str, Any] = {"detail": render_problems("The JobSpec was rejected", [problem]),
                            "problems": [problem.to_dict()]}
    if warnings:
        body["warnings"] = [str(w) for w in warnings]
    return Outcome(400, body)


def _resolved(decision: Decision) -> dict[str, Any]:
    found = decision.resolutions
    return {
        "init_from": found.init_from.path if found.init_from else "",
        "assets": {k: (v.path if v else "") for k, v in found.assets.items()},
        "plugins": [p.path if p else "" for p in found.plugins],
        # a benchmark job's suites, for the mounts of their packs (`scheduler/prepare.py`)
        "benchmarks": benchmark_packs.record(found.benchmarks),
    }


def _decide_one(rows: _Rows, snap: Snapshot, quota: QuotaView, item: Admitted, sweep_max: int = 0) -> Outcome:
    """Build one admitted job's rows, decide it on the batch's snapshot (booking the decision there; `sweep_max` is
    the parallel limit of its sweep) and return its answer."""
    warnings = [str(w) for w in item.decision.warnings]
    job = build_job(user_id=item.user.id, username=item.user.username, spec=item.spec, exp=item.exp,
                    profile=item.profile, priority=queue_priority(quota), meta=item.meta, resolved=_resolved(item.decision),
                    package_sha=item.package_sha, warnings=warnings, sweep_id=sweep_id_of(item.meta))
    fit, reason = place(snap, demand_of(job, quota.max_concurrent_gpus, quota.max_concurrent_jobs, sweep_max))
    event = status_event(job, fit.status, reason=reason or "admitted", waiting_for=fit.waiting_for)
    if fit is Fit.FITS:
        job.reason = ""
    queued = fit is not Fit.FITS
    body = {
        "job_id": job.id, "run_id": job.id, "queued": queued, "status": job.status,
        "message": reason if queued else f"admitted; starting on {item.profile}",
        "requested_gpus": item.spec.total_gpus, "dry_run": False, "warnings": warnings,
    }
    rows.add(job)
    rows.specs.append((job.id, item.spec))
    if event is not None:
        rows.add(event)
    rows.add(decision_row(user_id=item.user.id, source="submit", verdict="queued" if queued else "accepted",
                          exp=item.exp, recipe=item.spec.spec.recipe.name, job_id=job.id,
                          warnings=item.decision.warnings))
    return Outcome(202 if queued else 200, body)
