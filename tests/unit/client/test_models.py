"""Typed views of console answers: metrics shapes, cluster key sets, submission and verdict bodies."""

from __future__ import annotations

from starforge.client import AdmissionVerdict, ClusterStatus, MetricPoint, Metrics, SubmitResult, Usage, User


def test_metrics_from_series_arrays_objects_and_points() -> None:
    arrays = Metrics.from_body({"series": {"train/loss": [[2, 0.5, 1.0], [1, 0.9, 0.5]], "bad": [["x"]]},
                                "latest": {"train/loss": 0.5}})
    assert arrays.series == {"train/loss": (MetricPoint(1, 0.9, 0.5), MetricPoint(2, 0.5, 1.0))}
    objects = Metrics.from_body({"metrics": {"r": [{"step": 3, "value": 1}, {"step": 1, "value": True}]}})
    assert objects.series == {"r": (MetricPoint(3, 1.0),)}
    points = Metrics.from_body({"points": [{"key": "a", "step": 1, "value": 2.0}, {"key": "b", "step": 0, "value": 1}]})
    assert list(points.series) == ["a", "b"]
    assert points.latest() == {"a": MetricPoint(1, 2.0), "b": MetricPoint(0, 1.0)}


def test_cluster_status_reads_either_gpu_key_set() -> None:
    new = ClusterStatus.from_body({"gpu": {"total": 8, "used": 2, "free": 6, "series": [{"id": "h200"}]},
                                   "profiles": [{"name": "h200", "gpus_per_node": 8}, {"label": "nameless"}]})
    assert (new.total, new.used, new.free, len(new.series)) == (8, 2, 6, 1)
    assert [p.name for p in new.profiles] == ["h200"] and new.profiles[0].gpus_per_node == 8
    old = ClusterStatus.from_body({"gpu": {"gpu_total": 4, "gpu_used": 1, "gpu_free": 3}})
    assert (old.total, old.used, old.free) == (4, 1, 3)


def test_usage_caps_of_zero_or_null_are_unlimited() -> None:
    usage = Usage.from_body({"quota": {"max_concurrent_gpus": 8, "daily_gpu_hours": 0, "max_storage_gb": None}})
    assert usage.cap("max_concurrent_gpus") == 8
    assert usage.cap("daily_gpu_hours") is None and usage.cap("max_storage_gb") is None and usage.cap("x") is None


def test_submit_result_202_is_queued() -> None:
    assert SubmitResult.from_body({"job_id": "r-1"}, 202).queued
    assert not SubmitResult.from_body({"job_id": "r-1"}, 200).queued


def test_verdict_and_user() -> None:
    verdict = AdmissionVerdict.from_body({"problems": [{"field": "spec.a", "code": "c", "message": "m"}],
                                          "warnings": ["plain text"]})
    assert not verdict.ok and verdict.problems[0].field == "spec.a" and verdict.warnings[0].message == "plain text"
    assert User.from_body({"user": {"username": "a", "role": "admin"}, "username": "a"}).role == "admin"
    assert User.from_body({"username": "b"}).username == "b"
