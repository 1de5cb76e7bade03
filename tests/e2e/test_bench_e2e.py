"""Benchmarks end to end on the CPU, with `sf` alone: `sf bench run --wait` runs lm-eval (the evalkit/benchmark job,
in its own runtime) on the builtin pack's suites on a tiny model, its scores are in `sf job status --json`, and
`sf bench compare` of two runs of the same evaluation calls every difference `same` (their repeats measured the
evaluation's variance).

An operator pre-builds the recipe's runtime (`sf console runtime build evalkit-1.0.0`) into the test cache, outside
the clone (shared with the benchmark job's own tests), and makes the tiny Llama-style model with that runtime's
interpreter under a folder the console lists in `model_roots` (random weights, nothing downloaded).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import SF, Researcher, make_researcher
from tests.integration.conftest import DEFAULT_CONFIG, RUNTIME_CACHE, ConsoleProcess, make_console

RUNTIME = "evalkit-1.0.0"
JOB_TIMEOUT = 900
SUITES = "basic-arithmetic,basic-choice"


@dataclass
class World:
    """The benchmark deployment of this module: its console, the tiny model's folder and a researcher."""

    console: ConsoleProcess
    model: Path
    me: Researcher


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("bench")
    models = tmp / "models"
    models.mkdir()
    settings = {**DEFAULT_CONFIG, "model_roots": [str(models)],
                "runtimes": {"cache_dir": str(RUNTIME_CACHE), "hub_cache": str(tmp / "hub")}}
    config = tmp / "console.yaml"
    config.write_text(yaml.safe_dump(settings), encoding="utf-8")
    built = subprocess.run([*SF, "console", "runtime", "build", RUNTIME, "--kind", "cpu", "--config", str(config),
                            "--json"], capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stderr[-4000:]
    outside = tmp / "operator"
    outside.mkdir()
    made = subprocess.run([*SF, "console", "runtime", "run", RUNTIME, "--kind", "cpu", "--config", str(config), "--",
                           "-m", "starforge.trainers.tiny_model", "../models/tiny-llama"],
                          cwd=outside, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stderr[-4000:]
    console = make_console(tmp_path_factory, "sqlite", config=settings)
    console.start()
    try:
        me = make_researcher(console, tmp / "researcher", "bench")
        made_exp = me.sf("new", "evals", "--method", "evalkit/benchmark")
        assert made_exp.returncode == 0, made_exp.stderr
        me.commit("the evaluation experiment")
        yield World(console, models / "tiny-llama", me)
    finally:
        console.stop()
        shutil.rmtree(console.state_dir / "runs", ignore_errors=True)


def _bench_run(world: World) -> str:
    done = world.me.sf("bench", "run", "evals", "--model", str(world.model), "--suites", SUITES, "--limit", "4",
                       "--repeat", "2", "--profile", "cpu", "--wait", timeout=JOB_TIMEOUT)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "succeeded" in done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_bench_run_reports_scores_shown_by_status_and_compared(world: World) -> None:
    first, second = _bench_run(world), _bench_run(world)
    status = world.me.json("job", "status", first)
    assert status["status"] == "succeeded" and status["recipe"] == "evalkit/benchmark"
    scores = status["benchmarks"]
    assert {(s["benchmark"], s["repeat"]) for s in scores} == {(b, r) for b in SUITES.split(",") for r in (0, 1)}
    assert all(s["runner"] == "lm-eval" and 0.0 <= s["value"] <= 1.0 for s in scores)
    shown = world.me.sf("job", "status", first)
    assert shown.returncode == 0 and "basic-choice" in shown.stdout and "benchmarks" in shown.stdout

    compared = world.me.json("bench", "compare", first, second)
    assert {(r["benchmark"], r["metric"]) for r in compared["rows"]} >= {("basic-arithmetic", "exact_match"),
                                                                         ("basic-choice", "acc")}
    for row in compared["rows"]:  # the same greedy evaluation of the same model: no difference to call
        base, other = row["runs"]
        assert base["n"] == other["n"] == 2 and other["verdict"] == "same", row
    text = world.me.sf("bench", "compare", first, second)
    assert text.returncode == 0 and "same" in text.stdout
    assert json.loads(json.dumps(compared))["baseline"] == first
