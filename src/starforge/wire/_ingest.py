"""The ingest vocabulary (wire-protocol §11): the endpoint paths under `/api/ingest` and the lifecycle events."""

from __future__ import annotations

from typing import Final

__all__ = [
    "EVENT_FAILED",
    "EVENT_RUNNING",
    "EVENT_STARTING",
    "EVENT_SUCCEEDED",
    "INGEST_PATHS",
    "INGEST_ROOT",
    "LIFECYCLE_EVENTS",
    "PATH_ARTIFACT",
    "PATH_BENCHMARK",
    "PATH_CONTROL",
    "PATH_ENVIRONMENT_NODES",
    "PATH_HARDWARE",
    "PATH_HPARAMS",
    "PATH_LIFECYCLE",
    "PATH_LOGS",
    "PATH_METRICS",
    "PATH_VALIDATION",
]

INGEST_ROOT: Final = "/api/ingest"  # the console's prefix; `STARFORGE_ENDPOINT` is its base URL plus this

PATH_LIFECYCLE: Final = "lifecycle"
PATH_LOGS: Final = "logs"
PATH_METRICS: Final = "metrics"
PATH_HPARAMS: Final = "hparams"
PATH_ARTIFACT: Final = "artifact"
PATH_VALIDATION: Final = "validation"
PATH_HARDWARE: Final = "hardware"
PATH_ENVIRONMENT_NODES: Final = "environment/nodes"
PATH_BENCHMARK: Final = "benchmark"
PATH_CONTROL: Final = "control"  # our extension: what the console asks of the running job (`wire._resume`)
INGEST_PATHS: Final = (
    PATH_LIFECYCLE,
    PATH_LOGS,
    PATH_METRICS,
    PATH_HPARAMS,
    PATH_ARTIFACT,
    PATH_VALIDATION,
    PATH_HARDWARE,
    PATH_ENVIRONMENT_NODES,
    PATH_BENCHMARK,
    PATH_CONTROL,
)

EVENT_STARTING: Final = "starting"
EVENT_RUNNING: Final = "running"
EVENT_SUCCEEDED: Final = "succeeded"
EVENT_FAILED: Final = "failed"
LIFECYCLE_EVENTS: Final = (EVENT_STARTING, EVENT_RUNNING, EVENT_SUCCEEDED, EVENT_FAILED)
