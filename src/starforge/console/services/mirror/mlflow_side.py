"""The MLflow side of a mirror, through the official `mlflow` client (the only module that imports it, on first
use): make a job's run in its experiment with its tags and parameters, log a batch of points, set the run's status.
Every call raises `MirrorUnavailable` with a readable message when the tracking server cannot be reached or refuses.

Tier: shared (the tracking server's client; no store, no transaction).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlflow import MlflowClient

__all__ = ["MirrorUnavailable", "Point", "RunIdentity", "end_run", "log_points", "open_run", "reopen_run"]

# MLflow's batch limits (its REST API refuses more in one `log_batch`)
_MAX_PARAMS = 100
_MAX_PARAM_VALUE = 6000
_KEY_CHARS = re.compile(r"[^\w\-. :/]")


class MirrorUnavailable(RuntimeError):
    """Raised when the tracking server cannot be reached or refuses a call (the mirror retries later)."""


@dataclass(frozen=True)
class Point:
    """One platform metric point: key, value, step (None: 0) and time in seconds."""

    key: str
    value: float
    step: int | None
    ts: float


@dataclass(frozen=True)
class RunIdentity:
    """What names a job's MLflow run: its experiment, run name, tags and parameters."""

    experiment: str
    run_name: str
    tags: Mapping[str, str]
    params: Mapping[str, str]


def open_run(tracking_uri: str, identity: RunIdentity) -> str:
    """Create the job's run (its experiment too, when new) with its tags and parameters; return the run id."""
    from mlflow.entities import Param

    with _calls(tracking_uri) as client:
        experiment = client.get_experiment_by_name(identity.experiment)
        experiment_id = experiment.experiment_id if experiment is not None else _create_experiment(client, identity)
        run = client.create_run(experiment_id, tags=dict(identity.tags), run_name=identity.run_name)
        params = [Param(_key(k), str(v)[:_MAX_PARAM_VALUE]) for k, v in sorted(identity.params.items())]
        for start in range(0, len(params), _MAX_PARAMS):
            client.log_batch(run.info.run_id, params=params[start:start + _MAX_PARAMS], synchronous=True)
        return str(run.info.run_id)


def log_points(tracking_uri: str, run_id: str, points: Sequence[Point]) -> None:
    """Log `points` (at most MLflow's 1000 a call) to the run, each with its step and time."""
    from mlflow.entities import Metric

    metrics = [Metric(_key(p.key), p.value, int(p.ts * 1000), p.step or 0) for p in points]
    with _calls(tracking_uri) as client:
        client.log_batch(run_id, metrics=metrics, synchronous=True)


def end_run(tracking_uri: str, run_id: str, status: str, end_time: float | None) -> None:
    """Set the run's final status (FINISHED, FAILED or KILLED) and end time."""
    with _calls(tracking_uri) as client:
        client.set_terminated(run_id, status=status, end_time=int(end_time * 1000) if end_time else None)


def reopen_run(tracking_uri: str, run_id: str) -> None:
    """Mark an ended run RUNNING again: the job started another attempt, which logs to the same run."""
    with _calls(tracking_uri) as client:
        client.update_run(run_id, status="RUNNING")


def _create_experiment(client: MlflowClient, identity: RunIdentity) -> str:
    from mlflow.exceptions import MlflowException

    try:
        return str(client.create_experiment(identity.experiment))
    except MlflowException:  # made meanwhile by another job's mirror
        found = client.get_experiment_by_name(identity.experiment)
        if found is None:
            raise
        return str(found.experiment_id)


def _key(key: str) -> str:
    """Return `key` in the characters MLflow accepts in a metric or parameter name."""
    return _KEY_CHARS.sub("_", key)[:250] or "_"


@contextlib.contextmanager
def _calls(tracking_uri: str) -> Iterator[MlflowClient]:
    """Yield a client of one tracking server for a few calls; their failures become MirrorUnavailable."""
    _quick_failures()
    try:
        from mlflow import MlflowClient
    except ImportError as exc:
        raise MirrorUnavailable("this console has no MLflow client: its operator installs the `mlflow` extra "
                                "(pip install 'starforge-platform[mlflow]')") from exc
    try:
        yield MlflowClient(tracking_uri=tracking_uri)
    except Exception as exc:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise MirrorUnavailable(f"MLflow at {tracking_uri}: {first[:300]}") from exc


def _quick_failures() -> None:
    # the mirror retries with its own backoff, between other jobs' deliveries: the client's own retries (seven, with
    # growing sleeps, by default) would hold the mirror on one unreachable server for minutes
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "15")
