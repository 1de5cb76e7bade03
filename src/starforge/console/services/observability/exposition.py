"""The console's metrics in Prometheus' text format (0.0.4), made by `prometheus_client` from one registry per console
with one custom collector: every family is computed at scrape time, from the store (`figures`) or from this
process's own measurements (`recorder`).

Tier: use case (a scrape reads the store in its own read transaction). This is the only module that imports
`prometheus_client`, and nothing imports this module until the first scrape (the console starts without it).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from .... import __version__
from ..context import Runtime
from ..leadership.record import Leader
from ..leadership.record import current as current_leader
from .figures import StoreFigures, store_figures
from .recorder import Durations

__all__ = ["CONTENT_TYPE", "FAMILIES", "render"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
FAMILIES = (
    "starforge_jobs", "starforge_queue_jobs", "starforge_queue_oldest_wait_seconds", "starforge_capacity_gpus",
    "starforge_placed_gpus", "starforge_admission_decisions_total", "starforge_admission_rejections_total",
    "starforge_submission_duration_seconds", "starforge_scheduler_cycle_duration_seconds",
    "starforge_cache_size_bytes", "starforge_console_info", "starforge_leader_info",
)


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)  # the `le` label as Prometheus writes it


def _histogram(name: str, doc: str, label: str, durations: Durations) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=[label])
    for value, view in sorted(durations.snapshot().items()):
        family.add_metric([value], [(_bound(bound), count) for bound, count in view.buckets], view.total)
    return family


def _counter(name: str, doc: str, labels: list[str], counts: dict[tuple[str, str], int]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=labels)
    for values, count in sorted(counts.items()):
        family.add_metric(list(values), count)
    return family


class ConsoleCollector(Collector):
    """Every `starforge_…` family of one console, computed when Prometheus asks."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.host = socket.gethostname()

    def collect(self) -> Iterator[Any]:
        rt = self.rt
        now = time.time()
        with rt.db.read() as db:
            figures = store_figures(db, rt.observations.tally, now=now)
            leading = current_leader(db)
        series = sorted({*rt.settings.series(), *rt.capacity, *figures.waiting})
        yield from self._jobs(figures, series, now)
        yield from self._admissions(figures)
        yield _histogram("starforge_submission_duration_seconds",
                         "Time to answer a submission (POST /api/jobs), by outcome: started, queued, rejected, error; "
                         "its _count is the submissions this console answered since it started.",
                         "outcome", rt.observations.submissions)
        yield _histogram("starforge_scheduler_cycle_duration_seconds",
                         "Time of one scheduler cycle, by mode: place (placing waiting jobs too) or advance (launch "
                         "and watch only).", "mode", rt.observations.cycles)
        caches = GaugeMetricFamily("starforge_cache_size_bytes",
                                   "Bytes held by the console's caches: runtime (built recipe runtimes), image "
                                   "(unpacked job images).", labels=["cache"])
        for cache, size in sorted(rt.observations.cache_sizes().items()):
            caches.add_metric([cache], float(size))
        yield caches
        yield from self._identity(leading)

    def _jobs(self, figures: StoreFigures, series: list[str], now: float) -> Iterator[Any]:
        jobs = GaugeMetricFamily("starforge_jobs", "Jobs by status and by series of their pools (a job whose pools "
                                 "span several series counts under each).", labels=["status", "series"])
        for (status, name), count in sorted(figures.jobs.items()):
            jobs.add_metric([status, name], count)
        yield jobs
        depth = GaugeMetricFamily("starforge_queue_jobs", "Jobs waiting to be placed (queued or pending), per series.",
                                  labels=["series"])
        wait = GaugeMetricFamily("starforge_queue_oldest_wait_seconds",
                                 "How long the oldest waiting job of a series has waited since its submission (0 when "
                                 "none waits).", labels=["series"])
        capacity = GaugeMetricFamily("starforge_capacity_gpus", "GPU slots per series, as the engines declare them.",
                                     labels=["series"])
        for name in series:
            depth.add_metric([name], figures.waiting.get(name, 0))
            first = figures.oldest_submitted.get(name)
            wait.add_metric([name], max(0.0, now - first) if first is not None else 0.0)
            capacity.add_metric([name], self.rt.capacity.get(name, 0))
        yield depth
        yield wait
        yield capacity
        placed = GaugeMetricFamily("starforge_placed_gpus", "GPUs held by placed jobs (submitted, preparing, running), "
                                   "per series and account.", labels=["series", "account"])
        for (name, account), gpus in sorted(figures.placed_gpus.items()):
            placed.add_metric([name, account], gpus)
        yield placed

    @staticmethod
    def _admissions(figures: StoreFigures) -> Iterator[Any]:
        yield _counter("starforge_admission_decisions", "Admission decisions recorded in the audit log, by source "
                       "(submit, followup) and verdict (accepted, queued, rejected).", ["source", "verdict"],
                       figures.decisions)
        yield _counter("starforge_admission_rejections", "Rejected admissions by source and problem code (a rejection "
                       "counts once under each distinct code it carried).", ["source", "code"], figures.codes)

    def _identity(self, leading: Leader | None) -> Iterator[Any]:
        me = {"console_id": self.rt.identity, "host": self.host, "pid": str(os.getpid())}
        console = InfoMetricFamily("starforge_console", "This console process.")
        console.add_metric([], {**me, "version": __version__})
        yield console
        leader = InfoMetricFamily("starforge_leader", "The console process elected to run the scheduler, with its "
                                  "fencing epoch (the `leadership` row every process of this database shares).")
        if leading is not None:
            leader.add_metric([], {"console_id": leading.console_id, "host": leading.host, "pid": str(leading.pid),
                                   "epoch": str(leading.epoch)})
        yield leader


def _registry(rt: Runtime) -> CollectorRegistry:
    observations = rt.observations
    if observations.registry is None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(ConsoleCollector(rt))
        observations.registry = registry
    built: CollectorRegistry = observations.registry
    return built


def render(rt: Runtime) -> bytes:
    """Return this console's metrics in Prometheus' text format (0.0.4, `CONTENT_TYPE`), computed now; scrapes of
    one console run one at a time (the admission tally is advanced by each)."""
    with rt.observations.scrape_lock:
        return generate_latest(_registry(rt))
