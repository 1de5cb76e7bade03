"""TRL end to end on the CPU, with `sf` alone: trl/sft, trl/grpo and trl/dpo trained by the real TRL.

An operator pre-builds the recipes' runtime (`sf console runtime build trl-1.10.0`) into the test cache, outside the
clone, so it is built once per CI run and reused by every job and every later run; a tiny Llama-style model is built
from a config with that runtime's interpreter (`sf console runtime run … -m starforge.trainers.tiny_model`, from a
folder outside the repository: random weights, a tokenizer trained on the fly, nothing downloaded) under a folder
the console lists in `model_roots`. A researcher pushes the datasets with `sf dataset push`, creates the experiments
with `sf new` and submits each template as shipped with the CPU command its README shows (`--profile cpu:1
--set bf16=false …`); the template alone on a CPU series is refused before anything runs, with that fix. Each job
is followed through its logs, loss metrics and artifacts. A second SFT job starts from the first one's checkpoint;
a NeMo-RL job on the CPU-only deployment is refused at admission.
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

from tests.e2e.conftest import SF, Researcher, make_researcher
from tests.integration.conftest import DEFAULT_CONFIG, RUNTIME_CACHE, ConsoleProcess, make_console
from tests.integration.helpers import wait_for_status

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = "trl-1.10.0"
JOB_TIMEOUT = 900

README_FLAG = re.compile(r"--set\s+(\S+=\S+)")


def _readme_cpu_flags(recipe: str) -> list[str]:
    """Return the `--set` flags of the CPU command (`--profile cpu:1`) in the recipe template's README."""
    readme = (ROOT / "src" / "starforge" / "recipes" / "builtin" / recipe / "template" / "README.md").read_text()
    commands = [line for line in readme.splitlines() if "sf submit" in line and "--profile cpu:1" in line]
    assert len(commands) == 1, f"{recipe}'s README shows no single CPU command: {commands}"
    flags = [arg for flag in README_FLAG.findall(commands[0]) for arg in ("--set", flag)]
    assert flags, commands[0]
    return flags


@dataclass
class World:
    """The TRL deployment of this module: its console, the tiny model's cluster path, the data files, a researcher."""

    console: ConsoleProcess
    model: Path
    data: Path
    me: Researcher
    sft_run: str = ""  # the first SFT run, served by the serving test


def _console_config(tmp: Path, models: Path) -> dict[str, Any]:
    return {**DEFAULT_CONFIG, "model_roots": [str(models)],
            "runtimes": {"cache_dir": str(RUNTIME_CACHE), "hub_cache": str(tmp / "hub")}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("trl")
    models = tmp / "models"
    models.mkdir()
    config = tmp / "console.yaml"
    config.write_text(yaml.safe_dump(_console_config(tmp, models)), encoding="utf-8")
    built = subprocess.run([*SF, "console", "runtime", "build", RUNTIME, "--kind", "cpu", "--config", str(config),
                            "--json"], capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stderr[-4000:]
    runtime = json.loads(built.stdout)
    assert Path(runtime["interpreter"]).is_file()
    outside = tmp / "operator"  # the walkthrough's folder: no source checkout, only the installed package
    outside.mkdir()
    made = subprocess.run([*SF, "console", "runtime", "run", RUNTIME, "--kind", "cpu", "--config", str(config), "--",
                           "-m", "starforge.trainers.tiny_model", "../models/tiny-llama", "--data", "../data"],
                          cwd=outside, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stderr[-4000:]
    assert (models / "tiny-llama" / "config.json").is_file() and (tmp / "data" / "sft.jsonl").is_file()
    console = make_console(tmp_path_factory, "sqlite", config=_console_config(tmp, models))
    console.start()
    try:
        me = make_researcher(console, tmp / "researcher", "trl")
        yield World(console, models / "tiny-llama", tmp / "data", me)
    finally:
        console.stop()
        shutil.rmtree(console.state_dir / "runs", ignore_errors=True)


def _push(me: Researcher, path: Path, name: str) -> str:
    pushed = me.json("dataset", "push", str(path), name)
    assert pushed["ref"] == f"{me.user}/{name}"
    return str(pushed["ref"])


def _experiment(me: Researcher, name: str, method: str) -> None:
    """`sf new` the experiment and commit it: the template as shipped, nothing edited."""
    made = me.sf("new", name, "--method", method)
    assert made.returncode == 0, made.stderr
    me.commit(name)


def _submit(me: Researcher, name: str, *args: str) -> str:
    submitted = me.sf("submit", name, "--profile", "cpu:1", *args)
    assert submitted.returncode == 0, submitted.stderr
    assert "(1 CPU slot on cpu)" in submitted.stderr, submitted.stderr
    match = re.search(r"r-[0-9a-z]{10}", submitted.stdout)
    assert match, submitted.stdout
    return match.group(0)


def _succeeds(me: Researcher, job_id: str) -> str:
    followed = me.sf("job", "logs", job_id, timeout=JOB_TIMEOUT)
    status = me.json("job", "status", job_id)
    assert status["status"] == "succeeded", (status, followed.stdout[-6000:], followed.stderr[-2000:])
    assert followed.returncode == 0
    return followed.stdout


def _trained(me: Researcher, job_id: str) -> dict[str, Any]:
    """Require ≥2 loss points, a registered checkpoint with its step and a registered model; return the artifacts."""
    series = me.json("job", "metrics", job_id)["metrics"]
    loss = series.get("train/loss")
    assert loss is not None, sorted(series)
    assert len(loss) >= 2, loss
    listed = me.json("job", "artifacts", job_id)
    kinds = {a["kind"] for a in listed["artifacts"]}
    assert {"checkpoint", "model"} <= kinds, listed
    checkpoints = [a for a in listed["artifacts"] if a["kind"] == "checkpoint"]
    assert all(isinstance(a["step"], int) and a["step"] > 0 for a in checkpoints), checkpoints
    return listed


def test_sft_runs_end_to_end_and_a_second_job_starts_from_its_checkpoint(
        trainer_slot: None, world: World, tmp_path: Path) -> None:
    me = world.me
    train = _push(me, world.data / "sft.jsonl", "sft-train@1")
    val = _push(me, world.data / "sft-val.jsonl", "sft-val@1")
    _experiment(me, "tiny-sft", "trl/sft")
    inputs = ("--model", str(world.model), "--train-dataset", train, "--val-dataset", val)

    for refused in (me.sf("submit", "tiny-sft", "--profile", "cpu:1", *inputs),
                    me.sf("submit", "tiny-sft", "--profile", "cpu:1", "--dry-run", *inputs)):
        assert refused.returncode == 1, refused.stdout
        assert "spec.hyperparams.bf16" in refused.stderr and "--set bf16=false" in refused.stderr, refused.stderr
    assert not [j for j in me.jobs() if j.get("name") == "tiny-sft"]

    first = _submit(me, "tiny-sft", *inputs, *_readme_cpu_flags("trl/sft"))
    _succeeds(me, first)
    _trained(me, first)
    world.sft_run = first
    series = me.json("job", "metrics", first)["metrics"]
    assert series.get("eval/loss") and series.get("train/learning_rate"), sorted(series)

    downloaded = me.sf("job", "artifacts", first, "--download", str(tmp_path / "got"))
    assert downloaded.returncode == 0, downloaded.stderr
    assert list((tmp_path / "got").rglob("config.json")), sorted(p.name for p in (tmp_path / "got").rglob("*"))
    assert list((tmp_path / "got").rglob("*.safetensors"))

    second = _submit(me, "tiny-sft", *inputs, "--init-from", f"run/{first}/checkpoint", "--set", "bf16=false",
                     "--set", "max_steps=3")
    logs = _succeeds(me, second)
    spec = me.json("job", "spec", second)
    assert spec["spec"]["model"]["init_from"] == f"run/{first}/checkpoint"
    assert re.search(r"starting from checkpoint-\d+", logs), logs[-4000:]


def test_the_trained_sft_run_is_served_and_answers_a_streamed_chat_through_the_console(world: World) -> None:
    """Issue [5]'s done-when path: `run:<id>` of a tiny trained model served, streamed through the proxy, stopped."""
    from openai import OpenAI

    if not world.sft_run:
        pytest.skip("the SFT test did not train a run")
    me = world.me
    service = me.json("serve", "start", f"run:{world.sft_run}", "--wait")  # the real `sf`, until the server answers
    assert service["status"] == "ready" and service["run_id"] == world.sft_run, service
    assert f"/{world.sft_run}/out/" in service["model_path"]
    client = OpenAI(base_url=world.console.url + service["url"], api_key=me.token, max_retries=0)
    model = client.models.list().data[0].id
    chunks = list(client.chat.completions.create(model=model, stream=True, max_tokens=8,
                                                 messages=[{"role": "user", "content": "What is two plus two?"}]))
    assert chunks and chunks[-1].choices[0].finish_reason in ("stop", "length")
    assert me.json("serve", "stop", service["id"])["status"] == "stopped"
    with world.console.client(me.token) as api:
        # its job ends too (a service never ends by itself, and a job outlives its console by design)
        assert wait_for_status(api, service["id"], {"stopped", "failed", "succeeded"}, timeout=120)["status"] == "stopped"


def test_grpo_runs_its_template_with_the_readme_s_cpu_flags(trainer_slot: None, world: World) -> None:
    me = world.me
    prompts = _push(me, world.data / "prompts.jsonl", "grpo-prompts@1")
    held_out = _push(me, world.data / "prompts-val.jsonl", "grpo-prompts-val@1")
    _experiment(me, "tiny-grpo", "trl/grpo")
    job = _submit(me, "tiny-grpo", "--model", str(world.model), "--train-dataset", prompts, "--val-dataset", held_out,
                  *_readme_cpu_flags("trl/grpo"))
    _succeeds(me, job)
    _trained(me, job)
    assert me.json("job", "metrics", job)["metrics"].get("train/reward")


def test_dpo_runs_its_template_with_the_readme_s_cpu_flags(trainer_slot: None, world: World) -> None:
    me = world.me
    pairs = _push(me, world.data / "preference.jsonl", "dpo-pairs@1")
    held_out = _push(me, world.data / "preference-val.jsonl", "dpo-pairs-val@1")
    _experiment(me, "tiny-dpo", "trl/dpo")
    job = _submit(me, "tiny-dpo", "--model", str(world.model), "--train-dataset", pairs, "--val-dataset", held_out,
                  *_readme_cpu_flags("trl/dpo"))
    _succeeds(me, job)
    _trained(me, job)
    assert me.json("job", "metrics", job)["metrics"].get("eval/loss")


def test_the_runtime_was_built_once_and_reused(world: World) -> None:
    listed = subprocess.run([*SF, "console", "runtime", "ls", "--json", "--config", str(world.console.config_file)],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    rows = [r for r in json.loads(listed.stdout)["runtimes"] if r["runtime_id"] == RUNTIME and r["kind"] == "cpu"]
    assert len(rows) == 1, rows
    # the TRL runs' logs (a service's job runs in its own runtime, which it may build)
    logs = sorted(p for p in (world.console.state_dir / "runs").rglob("output.log") if "services" not in p.parts)
    assert logs and not any("[runtime]" in p.read_text(errors="replace") for p in logs), \
        "a job built the runtime again instead of reusing the pre-built one"


def test_nemo_rl_on_a_cpu_only_deployment_is_refused_at_admission(world: World) -> None:
    me = world.me
    made = me.sf("new", "big-rl", "--method", "nemo-rl/grpo")
    assert made.returncode == 0, made.stderr
    me.commit("nemo-rl")
    refused = me.sf("submit", "big-rl", "--profile", "cpu:1")
    assert refused.returncode != 0
    assert "spec.framework.kind" in refused.stderr, refused.stderr
    assert not [j for j in me.jobs() if j.get("name") == "big-rl"]
