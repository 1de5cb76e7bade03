"""The `report` SDK: batching and background flushing, dropped values, metrics.jsonl, disabled mode, HTTP failures."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from starforge.runner import IngestClient, Run, report

from .conftest import RUN_ID, TOKEN, IngestServer


def _environ(server: IngestServer, out_dir: Path | None = None, enabled: str = "1") -> dict[str, str]:
    env = {
        "STARFORGE_ENABLED": enabled,
        "STARFORGE_ENDPOINT": server.endpoint,
        "STARFORGE_RUN_ID": RUN_ID,
        "STARFORGE_TOKEN": TOKEN,
    }
    if out_dir is not None:
        env["FORGE_OUT_DIR"] = str(out_dir)
    return env


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(autouse=True)
def _finish_default_run() -> object:
    yield
    report.finish()


def test_points_arrive_non_finite_values_are_dropped_with_one_warning(
    ingest: IngestServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = report.init(environ=_environ(ingest, tmp_path))
    report.log({"train/loss": 0.5, "train/reward": math.nan}, step=1)
    report.log({"train/loss": math.inf, "train/reward": 2})
    report.log({"train/loss": 0.25})
    report.finish()

    assert run.enabled
    assert [(p["key"], p["step"], p["value"]) for p in ingest.points()] == [
        ("train/loss", 1, 0.5),
        ("train/reward", 2, 2.0),
        ("train/loss", 3, 0.25),
    ]
    assert all(set(p) == {"key", "step", "value", "ts"} for p in ingest.points())
    assert len(ingest.of("metrics")) == 1  # everything went out in the finish flush
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 1 and "not finite" in warnings[0]
    assert _jsonl(tmp_path / "metrics.jsonl") == ingest.points()


def test_background_thread_flushes_about_once_a_second(ingest: IngestServer, tmp_path: Path) -> None:
    run = Run.from_environ(_environ(ingest))
    started = time.monotonic()
    run.log({"a": 1.0}, step=0)
    try:
        assert ingest.wait_for(lambda: len(ingest.points()) == 1, timeout=5)
        assert time.monotonic() - started < 4  # about a second, with room for a loaded machine
    finally:
        run.finish()


def test_a_full_buffer_is_sent_at_once_in_batches_of_500(ingest: IngestServer) -> None:
    client = IngestClient(ingest.endpoint, RUN_ID, TOKEN)
    run = Run(client, flush_interval=60)  # only the 500-point threshold can trigger the sender
    try:
        for step in range(1200):
            run.log({"a": float(step)}, step=step)
        # the first 500 leave without waiting for the interval; what stays below 500 waits for finish()
        assert ingest.wait_for(lambda: len(ingest.points()) >= 500, timeout=5)
    finally:
        run.finish()

    assert [p["step"] for p in ingest.points()] == list(range(1200))
    assert max(len(r.body["points"]) for r in ingest.of("metrics")) == 500


def test_hparams_and_artifacts_are_sent(ingest: IngestServer, tmp_path: Path) -> None:
    weights = tmp_path / "step_3" / "w.npz"
    weights.parent.mkdir()
    weights.write_bytes(b"1234")
    run = Run.from_environ(_environ(ingest))
    run.hparams({"lr": 0.1, "path": tmp_path, "bad": math.nan, "nested": {"k": (1, 2)}})
    run.artifact("checkpoint", weights.parent, step=3, format="npz", metrics={"loss": 0.5, "x": math.nan})
    run.artifact("hf_export", "s3://bucket/export", format="huggingface")
    run.artifact("not-a-kind", weights)
    run.finish()

    [hp] = ingest.of("hparams")
    assert hp.body["params"] == {"lr": 0.1, "path": str(tmp_path), "bad": "nan", "nested": {"k": [1, 2]}}
    bodies = [r.body for r in ingest.of("artifact")]
    assert bodies == [
        {
            "run_id": RUN_ID,
            "kind": "checkpoint",
            "path": str(weights.parent),
            "format": "npz",
            "step": 3,
            "size_bytes": 4,
            "metrics": {"loss": 0.5},
        },
        {"run_id": RUN_ID, "kind": "hf_export", "path": "s3://bucket/export", "format": "huggingface"},
    ]


def test_disabled_mode_sends_nothing_and_never_fails(
    ingest: IngestServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = report.init(environ=_environ(ingest, tmp_path / "out", enabled="0"))
    report.log({"a": 1.0})
    report.hparams({"lr": 1})
    report.artifact("checkpoint", tmp_path)
    report.finish()

    assert not run.enabled
    assert ingest.requests == []
    assert [p["key"] for p in _jsonl(tmp_path / "out" / "metrics.jsonl")] == ["a"]
    assert capsys.readouterr().err == ""

    quiet = Run.from_environ({})  # no FORGE_OUT_DIR either: nothing at all happens
    quiet.log({"a": 1.0})
    quiet.finish()
    assert quiet.metrics_path is None


def test_log_before_init_initialises_from_the_environment(
    ingest: IngestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in _environ(ingest, tmp_path).items():
        monkeypatch.setenv(key, value)
    report.log({"a": 1.0}, step=7)
    assert report.current().enabled
    report.finish()
    assert [p["step"] for p in ingest.points()] == [7]


def test_403_stops_further_sending_with_one_warning(
    ingest: IngestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    ingest.answer_always("metrics", 403)
    run = Run.from_environ(_environ(ingest))
    run.log({"a": 1.0})
    run.flush()
    run.log({"a": 2.0})
    run.flush()
    run.finish()

    assert len(ingest.of("metrics")) == 1
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "403" in err


def test_unreachable_console_warns_once_and_keeps_going(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = IngestClient("http://127.0.0.1:9/api/ingest", RUN_ID, TOKEN, backoff=(0.0, 0.0))
    run = Run(client, out_dir=tmp_path)
    for step in range(3):
        run.log({"a": float(step)}, step=step)
        run.flush()
    run.finish()

    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "unavailable" in err
    assert len(_jsonl(tmp_path / "metrics.jsonl")) == 3  # the local record is complete


def test_bad_keys_values_and_steps_are_dropped_not_raised(
    ingest: IngestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Run.from_environ(_environ(ingest))
    run.log({"a": "high", "": 1.0, "b": 1}, step=2)  # type: ignore[dict-item]
    run.log({"c": 1.0}, step="x")  # type: ignore[arg-type]
    run.log({"d": 1.0}, step=4.0)  # type: ignore[arg-type]
    run.finish()
    run.log({"e": 1.0})  # after finish: ignored

    assert [(p["key"], p["step"]) for p in ingest.points()] == [("b", 2), ("d", 4)]
    assert capsys.readouterr().err.count("warning") == 4
