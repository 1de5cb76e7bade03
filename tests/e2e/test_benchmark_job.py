"""A benchmark job end to end on the CPU: `sf bench run` on the tiny model runs lm-eval in the evalkit runtime on the
builtin pack's suites and on a suite of a pack the researcher published (mounted into the job read-only), twice
(`--repeat 2`, two seeds); the scores the console stored (in `sf job status --json`) and those of the job's
eval/report.json equal what lm-eval's own `simple_evaluate` gives, run here directly in the same runtime on the same
model, tasks, limit and seeds. Then `sf bench run --wait` alone, as a researcher types it: its scores are in `sf job
status`, and `sf bench compare` of two runs of the same evaluation calls every difference `same` (their repeats
measured the evaluation's variance).

The runtime (`sf console runtime build evalkit-1.0.0`) is cached outside the clone like the TRL one; the tiny
Llama-style model is built with that runtime's interpreter (`sf console runtime run … -m
starforge.trainers.tiny_model`) under a folder the console lists in `model_roots`. Nothing is downloaded: the pack
carries its data and the job runs with the hub offline.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from starforge.benchmarks import BUILTIN_ROOT
from tests.e2e.conftest import SF, Researcher, make_researcher
from tests.integration.conftest import DEFAULT_CONFIG, RUNTIME_CACHE, ConsoleProcess, make_console

RUNTIME = "evalkit-1.0.0"
JOB_TIMEOUT = 900
SUITES = {"basic-arithmetic": ("basic_arithmetic", "exact_match"), "basic-choice": ("basic_choice", "acc")}
LIMIT, SEEDS = 10, (1234, 1235)  # the template's seed, then one more for the second repetition

# lm-eval called the way its documentation shows, on the pack's folder, with the batch the job uses for the template's
# `batch_size: auto` on a CPU: nothing of StarForge is imported
_DIRECT = """
import json, sys
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager

model, tasks, limit, seeds = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), [int(s) for s in sys.argv[4:]]
out = {}
for seed in seeds:
    got = simple_evaluate(model="hf", model_args=f"pretrained={model},dtype=bfloat16", tasks=tasks, device="cpu",
                          batch_size=8, limit=limit, num_fewshot=0, log_samples=False,
                          task_manager=TaskManager(include_path=".", include_defaults=False), random_seed=seed,
                          numpy_random_seed=seed, torch_random_seed=seed, fewshot_random_seed=seed)
    out[seed] = got["results"]
print("RESULTS " + json.dumps(out))
"""


@dataclass
class World:
    """This module's deployment: its console, the evalkit runtime's interpreter, the tiny model, a researcher."""

    console: ConsoleProcess
    python: Path
    model: Path
    me: Researcher
    runs: list[str]  # the benchmark jobs run so far, in order


def _console_config(tmp: Path, models: Path) -> dict[str, Any]:
    return {**DEFAULT_CONFIG, "model_roots": [str(models)],
            "runtimes": {"cache_dir": str(RUNTIME_CACHE), "hub_cache": str(tmp / "hub")}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("bench")
    models = tmp / "models"
    models.mkdir()
    config = tmp / "console.yaml"
    config.write_text(yaml.safe_dump(_console_config(tmp, models)), encoding="utf-8")
    built = subprocess.run([*SF, "console", "runtime", "build", RUNTIME, "--kind", "cpu", "--config", str(config),
                            "--json"], capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stderr[-4000:]
    python = Path(json.loads(built.stdout)["interpreter"])
    made = subprocess.run([*SF, "console", "runtime", "run", RUNTIME, "--kind", "cpu", "--config", str(config), "--",
                           "-m", "starforge.trainers.tiny_model", str(models / "tiny-llama")],
                          cwd=tmp, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stderr[-4000:]
    console = make_console(tmp_path_factory, "sqlite", config=_console_config(tmp, models))
    console.start()
    try:
        me = make_researcher(console, tmp / "researcher", "bench")
        assert me.sf("new", "bench", "--method", "evalkit/benchmark").returncode == 0
        me.commit("bench")
        yield World(console, python, models / "tiny-llama", me, [])
    finally:
        console.stop()
        shutil.rmtree(console.state_dir / "runs", ignore_errors=True)


def _direct(world: World, tmp_path: Path) -> dict[str, Any]:
    """Return lm-eval's own results per seed, run in the runtime on the builtin pack's folder."""
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run([str(world.python), "-c", _DIRECT, str(world.model), ",".join(t for t, _ in SUITES.values()),
                           str(LIMIT), *map(str, SEEDS)], cwd=BUILTIN_ROOT, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULTS "))
    return {int(seed): results for seed, results in json.loads(line[len("RESULTS "):]).items()}


def _published_pack(me: Researcher, tmp_path: Path) -> str:
    """Publish a copy of the builtin pack whose choice suite is `<user>-pick` (its task keeps the name basic_choice,
    as the builtin one's); return that suite's name."""
    folder = tmp_path / "quiz"
    shutil.copytree(BUILTIN_ROOT, folder)
    manifest = (folder / "plugin.yaml").read_text(encoding="utf-8").replace("name: basic\n", "name: quiz\n")
    manifest = manifest.replace("name: basic-choice", f"name: {me.user}-pick")
    (folder / "plugin.yaml").write_text(manifest.replace("name: basic-arithmetic", f"name: {me.user}-sums"),
                                        encoding="utf-8")
    published = me.sf("plugin", "publish", str(folder))
    assert published.returncode == 0, published.stderr
    return f"{me.user}-pick"


def test_a_benchmark_job_reports_the_scores_lm_eval_gives_itself(
        trainer_slot: None, world: World, tmp_path: Path) -> None:
    me = world.me
    pick = _published_pack(me, tmp_path)
    submitted = me.sf("bench", "run", "bench", "--model", str(world.model), "--suites", ",".join([*SUITES, pick]),
                      "--limit", str(LIMIT), "--repeat", str(len(SEEDS)), "--profile", "cpu:1", "--json")
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["job_id"]
    world.runs.append(job_id)
    followed = me.sf("job", "logs", job_id, timeout=JOB_TIMEOUT)
    status = me.json("job", "status", job_id)
    assert status["status"] == "succeeded", (status, followed.stdout[-6000:], followed.stderr[-2000:])
    assert "scores sent to the console" in followed.stdout, followed.stdout[-4000:]
    for suite, (task, _metric) in SUITES.items():  # the suites admission chose, named by the launch
        assert f"{suite}: task {task} of starforge/basic@1.0.0, chosen by the console" in followed.stdout
    mounted = re.search(rf"{pick}: task basic_choice of {me.user}/quiz@1.0.0, chosen by the console \((\S+)\)",
                        followed.stdout)
    assert mounted and "bench-" in mounted.group(1), followed.stdout[-4000:]  # the published pack, mounted

    expected = {(suite, metric, k): results[task][f"{metric},none"]
                for k, results in enumerate(_direct(world, tmp_path)[seed] for seed in SEEDS)
                for suite, (task, metric) in SUITES.items()}
    assert 0 < expected[("basic-choice", "acc", 0)] < 1  # a number that says something, not a constant
    for k in range(len(SEEDS)):  # the published pack holds the same data under the same task name
        expected[(pick, "acc", k)] = expected[("basic-choice", "acc", k)]
    stored = {(s["benchmark"], s["metric"], s["repeat"]): s["value"] for s in status["benchmarks"]}
    assert stored == expected
    assert {s["runner"] for s in status["benchmarks"]} == {"lm-eval"}

    run_dir = world.console.state_dir / "runs" / me.user / "bench" / job_id
    report = json.loads((run_dir / "out" / "eval" / "report.json").read_text(encoding="utf-8"))
    assert {(s["benchmark"], s["metric"], s["repeat"]): s["value"] for s in report["scores"]} == expected
    assert report["seeds"] == list(SEEDS) and report["limit"] == LIMIT and report["runner_version"] == "0.4.13"
    assert (report["device"], report["batch_size"]) == ("cpu", 8)  # the template's `auto` on the CPU
    assert [s["pack"] for s in report["suites"]] == ["starforge/basic"] * 2 + [f"{me.user}/quiz"]
    artifacts = me.json("job", "artifacts", job_id)["artifacts"]
    assert [a["kind"] for a in artifacts if a["path"].endswith("eval/report.json")] == ["eval_report"]


def _bench_run(world: World) -> str:
    """Run `sf bench run --wait` on the builtin suites; return the job id it printed."""
    done = world.me.sf("bench", "run", "bench", "--model", str(world.model), "--suites", ",".join(SUITES), "--limit",
                       str(LIMIT), "--repeat", str(len(SEEDS)), "--profile", "cpu:1", "--wait", timeout=JOB_TIMEOUT)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "succeeded" in done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_bench_run_reports_scores_shown_by_status_and_compared(trainer_slot: None, world: World) -> None:
    first = world.runs[0] if world.runs else _bench_run(world)  # the same evaluation as the test above, when it ran
    second = _bench_run(world)
    status = world.me.json("job", "status", second)
    assert status["status"] == "succeeded" and status["recipe"] == "evalkit/benchmark"
    scores = status["benchmarks"]
    assert {(s["benchmark"], s["repeat"]) for s in scores} == {(b, r) for b in SUITES for r in range(len(SEEDS))}
    assert all(s["runner"] == "lm-eval" and 0.0 <= s["value"] <= 1.0 for s in scores)
    shown = world.me.sf("job", "status", second)
    assert shown.returncode == 0 and "basic-choice" in shown.stdout and "benchmarks" in shown.stdout

    compared = world.me.json("bench", "compare", first, second)
    assert compared["baseline"] == first
    rows = {(r["benchmark"], r["metric"]): r for r in compared["rows"]}
    assert set(rows) >= {("basic-arithmetic", "exact_match"), ("basic-choice", "acc")}
    for suite, (_task, metric) in SUITES.items():  # the same evaluation of the same model: no difference to call
        base, other = rows[(suite, metric)]["runs"]
        assert base["n"] == other["n"] == len(SEEDS) and other["verdict"] == "same", rows[(suite, metric)]
    text = world.me.sf("bench", "compare", first, second)
    assert text.returncode == 0 and "same" in text.stdout


_TEMPLATES = """
import lm_eval.utils as u
from jinja2.exceptions import SecurityError
from starforge.evalkit._harness import sandbox_templates

escape = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
assert "object" in u.apply_template("{{ ''.__class__.__mro__ }}", {})  # lm-eval's own environment reaches Python
sandbox_templates()
assert u.apply_template("Q: {{question | regex_replace('a', 'b')}}", {"question": "a cat"}) == "Q: b cbt"
try:
    u.apply_template(escape, {})
except SecurityError as exc:
    print("REFUSED", exc)
"""


def test_the_jobs_prompt_templates_reach_no_python_object(world: World) -> None:
    """A pack's templates are someone else's text: the job renders them in Jinja's sandbox (lm-eval's would not)."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([str(world.python), "-c", _TEMPLATES], env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "REFUSED access to attribute '__class__'" in done.stdout
