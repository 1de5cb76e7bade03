"""The mirror's thread (`MirrorLoop`): every `mlflow.interval_seconds` it records the mirror of each new job of an
external-observability recipe (of every job with `mlflow.mirror_all`: to that server when the job names none), wakes
the mirrors of jobs that started again, claims the due ones and delivers them; ingestion and the scheduler never wait
for it.

Tier: use case (a background loop: its own short transactions, and `deliver` for each due mirror).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time

from ..context import Runtime
from . import outbox
from .deliver import deliver
from .targets import Resolver, mirror_target, resolve

__all__ = ["MirrorLoop"]

log = logging.getLogger("starforge.mirror")

LEASE_SECONDS = 120.0
# new jobs are looked for among those submitted since the previous look, less this margin (a batch of submissions
# commits after the time it records; another process's clock may differ a little); the first look reads them all
LOOK_BACK_SECONDS = 300.0


class MirrorLoop:
    """Mirror jobs' metrics to MLflow on a thread of its own (started only when `mlflow.allow_hosts` names a host)."""

    def __init__(self, rt: Runtime, *, resolver: Resolver = resolve) -> None:
        self.rt = rt
        self.settings = rt.settings.mlflow
        self.resolver = resolver
        self.owner = f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(4)}"
        self._since = 0.0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="starforge-mlflow-mirror", daemon=True)

    def start(self) -> None:
        """Start mirroring."""
        self._thread.start()

    def stop(self) -> None:
        """Stop after the current delivery (what is not sent yet is sent by the next console)."""
        self._stopping.set()
        self._thread.join(timeout=20)

    def cycle(self) -> None:
        """Record new mirrors, wake those of restarted jobs, then deliver every due one."""
        now = time.time()
        recipes = None if self.settings.mirror_all else outbox.external_recipes(self.rt.catalog)  # None: every job
        with self.rt.db.read() as s:
            found = [(job.id, outbox.mirror_url(job, self.settings)) for job in
                     outbox.jobs_to_mirror(s, recipes, since=self._since)]
        # names are resolved outside the write transaction: a slow DNS answer must not hold the store's writer
        targets = [(job_id, mirror_target(url, self.settings, resolver=self.resolver)) for job_id, url in found]
        with self.rt.db.write() as s:
            for job_id, target in targets:
                outbox.add_mirror(s, job_id, target, now)
            outbox.reawaken(s, now)
            claimed = outbox.claim_due(s, self.owner, now, LEASE_SECONDS)
        if len(found) < 100:  # all new jobs seen: the next look starts later
            self._since = now - LOOK_BACK_SECONDS
        for job_id in claimed:
            if self._stopping.is_set():
                break
            deliver(self.rt.db, job_id, self.settings, resolver=self.resolver)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self.cycle()
            except Exception:  # a failed cycle must not stop the mirror; the next one retries
                log.exception("mlflow mirror cycle failed")
            self._stopping.wait(self.settings.interval_seconds)
