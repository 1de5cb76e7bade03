"""Observability for operators: what the console measures of itself (`recorder`, `timing`), what the store says at
scrape time (`figures`) and `/metrics` in Prometheus' text format (`scrape`; `exposition` is loaded on first use,
so the console starts without `prometheus_client`).

Tier: shared (the package's public list; each module states its own tier).
"""

from __future__ import annotations

from .recorder import CYCLE_BUCKETS, SUBMISSION_BUCKETS, AdmissionTally, Durations, Observations, TimingsView
from .scrape import Scraped, scrape
from .timing import observed_submission

__all__ = ["CYCLE_BUCKETS", "SUBMISSION_BUCKETS", "AdmissionTally", "Durations", "Observations", "Scraped",
           "TimingsView", "observed_submission", "scrape"]
