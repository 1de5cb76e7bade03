"""Jobs that survive, with real processes: preemption that checkpoints first, automatic resume, pause and resume, a
console restart mid-run, and fair share.

- A TRL SFT job on the tiny model (a checkpoint every few steps) on a one-slot console with `preemption: {policy:
  priority}` is preempted by a higher-priority account's tinyrl job: it saves a checkpoint and stops, the other job
  runs and succeeds, and the SFT job resumes by itself, as the same job, from its checkpoint to the full step count
  (`attempts` 2, `resumed_from` its checkpoint, a loss series without a repeated step). On the local executor, Slurm
  and Ray (markers `slurm`, `ray`: the services of `scripts/services.sh up`).
- On the local executor, `custom/custom` jobs run a small resumable trainer (TRAINER): a job killed mid-run with
  `max_restarts: 1` resumes from its checkpoint; without restarts it fails at once; failing twice it is failed with
  both attempts' reasons. A console killed mid-run re-attaches the job that kept running and resumes the one whose
  process died meanwhile. A paused job checkpoints, holds no capacity while paused and resumes from its checkpoint.
  On a two-slot console a one-job account starts before the third run of a six-job account (fair share, the
  default).

Every wait is on an event (a status, a registered checkpoint, a file the test creates), with a deadline; the trainer
holds at a chosen step until the test releases it (`go` in its work folder) or the console asks it to checkpoint and
stop (FORGE_PREEMPT_FILE), so no case depends on how fast anything runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import yaml
from sqlalchemy import select

from tests.conftest import _service_env, require_service
from tests.e2e.conftest import SF, Researcher, make_researcher
from tests.integration.conftest import DEFAULT_CONFIG, RUNTIME_CACHE, ConsoleProcess, make_console, unique
from tests.integration.helpers import TERMINAL, admitted, bundle, spec_for, submit

T = TypeVar("T")
RUNTIME = "trl-1.10.0"
ENGINES = [pytest.param("local"), pytest.param("slurm", marks=pytest.mark.slurm),
           pytest.param("ray", marks=pytest.mark.ray)]
SLURM_SERIES = {"cpu": {"gres": "none"}}
GRACE = 8  # preemption.grace_seconds: a job asked to checkpoint is stopped by its engine after this (it asks every 1 s)
SFT_STEPS = 50  # the SFT job's max_steps: the tiny model trains ~13 steps a second here, so it is asked mid-run
SFT_SAVE = 5
JOB_TIMEOUT = 600  # a deadline for one job to reach an awaited state (never reached when things work)

# A resumable trainer for `custom/custom` jobs: a loss point per step, a checkpoint (registered at once) every
# `save_every` steps, resumed from FORGE_RESUME_FROM. What each attempt does comes from plan.json, by attempt number:
# `hold` at a step until `go` exists in the work folder or the console asks for a checkpoint (FORGE_PREEMPT_FILE:
# it then saves one and exits 0), `kill` itself (SIGKILL) or `fail` (exit 3, after an error line unless `quiet`)
# at a step.
TRAINER = r'''
import json, os, signal, sys, time
from pathlib import Path

from starforge.runner import report

plan = json.loads(Path(__file__).with_name("plan.json").read_text())
attempt = int(os.environ.get("FORGE_ATTEMPT", "1"))
out = Path(os.environ["FORGE_OUT_DIR"])
resume = os.environ.get("FORGE_RESUME_FROM", "")
step = json.loads((Path(resume) / "state.json").read_text())["step"] if resume else 0
said = f" from {resume} (FORGE_RESUME_STEP={os.environ.get('FORGE_RESUME_STEP', '')})" if resume else ""
print(f"trainer: attempt {attempt} starts after step {step}{said}", flush=True)
preempt = os.environ.get("FORGE_PREEMPT_FILE", "")
Path("pid").write_text(str(os.getpid()))
act = plan.get(str(attempt), {})
saved = 0


def save(n):
    global saved
    folder = out / "checkpoints" / f"step_{n}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.json").write_text(json.dumps({"step": n}))
    report.artifact("checkpoint", folder, step=n)
    report.current().flush()
    saved = n


def asked():
    return bool(preempt) and Path(preempt).exists()


while step < plan["steps"]:
    step += 1
    report.log({"train/loss": 1.0 / step}, step=step)
    if step % plan["save_every"] == 0:
        save(step)
    if step == act.get("hold"):
        report.current().flush()
        print(f"trainer: holding at step {step}", flush=True)
        while not Path("go").exists() and not asked():
            time.sleep(0.05)
    if asked():
        if saved != step:
            save(step)
        print(f"trainer: asked to checkpoint: saved step {step}, stopping", flush=True)
        report.finish()
        sys.exit(0)
    if step == act.get("kill"):
        report.finish()
        print(f"trainer: attempt {attempt} kills itself at step {step}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    if step == act.get("fail"):
        report.finish()
        if not act.get("quiet"):
            print(f"RuntimeError: boom at step {step} of attempt {attempt}", file=sys.stderr, flush=True)
        sys.exit(3)
report.finish()
print(f"trainer: done after step {step}", flush=True)
'''


# -- waiting, reading ---------------------------------------------------------------------------------------------

def _until(probe: Callable[[], T | None], what: str, timeout: float = JOB_TIMEOUT,
           state: Callable[[], Any] | None = None) -> T:
    """Poll `probe` until it returns something truthy; fail naming `what` (and `state()`) at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:.0f} s: " + (
            repr(state()) if state is not None else "")
        time.sleep(0.2)


def _row(api: httpx.Client, job: str) -> dict[str, Any]:
    answer = api.get("/api/job", params={"id": job})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _status_is(api: httpx.Client, job: str, *statuses: str, timeout: float = JOB_TIMEOUT) -> dict[str, Any]:
    """Wait until `job` is in one of `statuses` and return its row (fail at once on an unexpected final status)."""
    def probe() -> dict[str, Any] | None:
        row = _row(api, job)
        if row["status"] in statuses:
            return row
        assert row["status"] not in TERMINAL, (f"{job} ended {row['status']} while awaited {statuses}: "
                                               f"{row.get('message')}\n{_log(api, job)[-4000:]}")
        return None
    return _until(probe, f"{job} becoming {'|'.join(statuses)}", timeout, lambda: _row(api, job))


def _log(api: httpx.Client, job: str) -> str:
    """Return the job's whole log as it is now."""
    answer = api.get("/api/job/logs/stream", params={"id": job, "tail": 0, "follow": "false"})
    return answer.text if answer.status_code == 200 else f"<log: {answer.status_code} {answer.text}>"


def _checkpoints(api: httpx.Client, job: str) -> list[dict[str, Any]]:
    listed = api.get(f"/api/jobs/{job}/artifacts")
    assert listed.status_code == 200, listed.text
    return [a for a in listed.json()["artifacts"] if a["kind"] == "checkpoint"]


def _reported_steps(api: httpx.Client, job: str, key: str = "train/loss") -> set[int]:
    """The steps of `key` the console holds so far (none yet: an empty set)."""
    series = api.get(f"/api/jobs/{job}/metrics").json()["series"]
    return {point[0] for point in series.get(key, [])}


def _loss_steps(api: httpx.Client, job: str, key: str = "train/loss") -> list[int]:
    series = api.get(f"/api/jobs/{job}/metrics").json()["series"]
    assert key in series, sorted(series)
    return [point[0] for point in series[key]]


@dataclass(frozen=True)
class Attempts:
    """A job's attempts as the console states them: the count, the checkpoint the current one started from, and
    each attempt's (number, outcome, reason, resumed_from)."""

    count: int
    resumed_from: str | None
    history: list[tuple[int, str, str, str]]


def _attempts(console: ConsoleProcess, api: httpx.Client, job: str) -> Attempts:
    """Read `attempts` and `resumed_from` from the job's status (`sf job status --json`'s row) where it has them,
    and the history of attempts from the console's database (read only)."""
    from starforge.console.store.models import Job, JobAttempt

    with console.database().read() as db:
        stored = db.get(Job, job)
        assert stored is not None, job
        count, resumed = stored.attempts, stored.resumed_from or None
        history = [(a.number, a.outcome, a.reason, a.resumed_from) for a in
                   db.scalars(select(JobAttempt).where(JobAttempt.job_id == job).order_by(JobAttempt.number))]
    row = _row(api, job)
    if "attempts" in row:
        assert row["attempts"] == count, (row, count)
        count = row["attempts"]
    if "resumed_from" in row:
        resumed = row["resumed_from"]
    return Attempts(count, resumed, history)


def _run_dir(console: ConsoleProcess, job: str) -> Path:
    found = list((console.state_dir / "runs").glob(f"*/*/{job}"))
    assert len(found) == 1, found
    return found[0]


def _release(console: ConsoleProcess, job: str) -> None:
    """Let a trainer that holds go on (`go` in its work folder)."""
    (_run_dir(console, job) / "work" / "go").touch()


# -- submitting ---------------------------------------------------------------------------------------------------

def _user(console: ConsoleProcess, prefix: str, **quota: Any) -> httpx.Client:
    """A new account (with `quota`, e.g. priority=10) and an API client for it."""
    name = unique(prefix)
    token = console.token_for(name)
    if quota:
        with console.client(console.admin_token) as admin:
            answer = admin.post("/api/admin/quotas", json={"username": name, **quota})
            assert answer.status_code == 200, answer.text
    return console.client(token)


def _trainer_job(api: httpx.Client, name: str, *, steps: int, save_every: int = 2, max_restarts: int | None = None,
                 **attempts: dict[str, int]) -> str:
    """Submit a custom/custom job running TRAINER; `attempts` says what each does (`a1={"hold": 3}`, …)."""
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}", series="cpu", gpus=1)
    spec["spec"]["framework"]["image"] = "nvcr.io/team/trainer:1.0"
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
    plan = {"steps": steps, "save_every": save_every, **{k.removeprefix("a"): v for k, v in attempts.items()}}
    files = {f"experiments/{name}/train.sh": f'exec {sys.executable} "$(dirname "$0")/train.py"\n',
             f"experiments/{name}/train.py": TRAINER, f"experiments/{name}/plan.json": json.dumps(plan)}
    extra = {"max_restarts": max_restarts} if max_restarts is not None else None
    return admitted(submit(api, spec, data=bundle(files), extra_meta=extra))


def _tinyrl_job(api: httpx.Client) -> str:
    spec = spec_for(api, "tinyrl/grpo", hyperparams={"max_num_steps": 5, "checkpoint_save_period": 5})
    return admitted(submit(api, spec))


def _control(api: httpx.Client, job: str, action: str) -> dict[str, Any]:
    """`sf job pause|resume|retry`'s request."""
    answer = api.post(f"/api/jobs/{job}/{action}")
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


# -- the TRL world: runtime pre-built (once per machine), the tiny model, the consoles -----------------------------

@dataclass
class World:
    """The TRL inputs of this module: the tiny model's folder and the data files (under the console's model_roots)."""

    models: Path
    model: Path
    data: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """Pre-build the TRL runtime into the shared test cache (once per machine) and make the tiny model with it."""
    tmp = tmp_path_factory.mktemp("resume-trl")
    models = tmp / "models"
    models.mkdir()
    config = tmp / "console.yaml"
    config.write_text(yaml.safe_dump({**DEFAULT_CONFIG, "model_roots": [str(models)],
                                      "runtimes": {"cache_dir": str(RUNTIME_CACHE), "hub_cache": str(tmp / "hub")}}))
    built = subprocess.run([*SF, "console", "runtime", "build", RUNTIME, "--kind", "cpu", "--config", str(config),
                            "--json"], capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stderr[-4000:]
    outside = tmp / "operator"
    outside.mkdir()
    made = subprocess.run([*SF, "console", "runtime", "run", RUNTIME, "--kind", "cpu", "--config", str(config), "--",
                           "-m", "starforge.trainers.tiny_model", "../models/tiny-llama", "--data", "../data"],
                          cwd=outside, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stderr[-4000:]
    return World(models, models / "tiny-llama", tmp / "data")


def _slurm_env() -> dict[str, str]:
    require_service("Slurm", "SLURM_AVAILABLE", "run `scripts/services.sh up`")
    conf = _service_env().get("SLURM_CONF", "")
    return {"SLURM_CONF": conf} if conf else {}


@pytest.fixture(scope="module", params=ENGINES)
def one_slot(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
             world: World) -> Iterator[tuple[str, ConsoleProcess]]:
    """A console with one CPU slot and priority preemption (a short grace), on the local executor, Slurm or Ray."""
    name = request.param
    config: dict[str, Any] = {**DEFAULT_CONFIG, "capacity": {"cpu": 1}, "stop_grace_seconds": 2,
                              "preemption": {"policy": "priority", "grace_seconds": GRACE},
                              "model_roots": [str(world.models)]}
    env: dict[str, str] = {}
    args: tuple[str, ...] = ()
    if name == "slurm":
        env = _slurm_env()
        config["executors"] = {"slurm": {"series": SLURM_SERIES, "capacity": {"cpu": 1}}}  # one slot of the cluster
        args = ("--executor", "slurm")
    elif name == "ray":
        address = require_service("Ray", "RAY_ADDRESS", "run `scripts/services.sh up`")
        config["executors"] = {"ray": {"capacity": {"cpu": 1}}}
        args = ("--executor", "ray", "--ray-address", address)
    console = make_console(tmp_path_factory, "sqlite", config=config, extra_args=args)
    console.env.update(env)
    console.start()
    yield name, console
    console.stop()


# -- 1. preemption round trip (TRL) ---------------------------------------------------------------------------------

def _sft_experiment(me: Researcher, world: World) -> tuple[str, ...]:
    """Push the data, make the trl/sft experiment (a loss point every step, a checkpoint every SFT_SAVE steps, no
    evaluation) and return the `sf submit` arguments of the CPU command."""
    train = me.json("dataset", "push", str(world.data / "sft.jsonl"), "sft-train@1")["ref"]
    val = me.json("dataset", "push", str(world.data / "sft-val.jsonl"), "sft-val@1")["ref"]
    made = me.sf("new", "tiny-sft", "--method", "trl/sft")
    assert made.returncode == 0, made.stderr
    config_file = next(me.lab.rglob("tiny-sft/config.yaml"))
    config = yaml.safe_load(config_file.read_text())
    config.update(logging_steps=1, eval_strategy="no")
    config_file.write_text(yaml.safe_dump(config))
    me.commit("tiny-sft")
    return ("--profile", "cpu:1", "--model", str(world.model), "--train-dataset", train, "--val-dataset", val,
            "--set", "bf16=false", "--set", f"max_steps={SFT_STEPS}", "--set", f"save_steps={SFT_SAVE}")


def test_a_preempted_trl_job_checkpoints_and_resumes_to_the_full_step_count(
        trainer_slot: None, one_slot: tuple[str, ConsoleProcess], world: World, tmp_path: Path) -> None:
    engine, console = one_slot
    me = make_researcher(console, tmp_path, "low")  # priority 0, the default
    submitted = me.sf("submit", "tiny-sft", *_sft_experiment(me, world))
    assert submitted.returncode == 0, submitted.stderr
    sft = submitted.stdout.strip()
    api = console.client(me.token)
    high = _user(console, "high", priority=10)
    try:
        first = _until(lambda: _checkpoints(api, sft), f"{sft}'s first checkpoint",
                       state=lambda: (_row(api, sft), _log(api, sft)[-3000:]))
        assert _row(api, sft)["status"] == "running"
        urgent = _tinyrl_job(high)  # waits for the one slot: the SFT job is preempted for it
        done = _status_is(high, urgent, "succeeded")
        row = _status_is(api, sft, "succeeded")
        assert row.get("executor") == engine, row
        log = _log(api, sft)
        lives = _attempts(console, api, sft)
        assert lives.count == 2, (lives, log[-6000:])
        (one, _o1, _r1, from1), (two, outcome2, _r2, from2) = lives.history
        assert (one, two, from1, outcome2) == (1, 2, "", "succeeded"), lives
        assert lives.history[0][1] == "preempted", lives
        resumed = lives.resumed_from or ""
        assert Path(resumed).name.startswith("checkpoint-") and Path(from2).name == Path(resumed).name, lives
        resume_step = int(Path(resumed).name.split("-")[1])
        assert first[0]["step"] <= resume_step < SFT_STEPS, (first, resumed)
        assert done["started_at"] >= _attempt_ended(console, sft, 1), "the urgent job ran before the slot freed"

        assert f"attempt 2 of {sft}" in log and f"resuming from checkpoint-{resume_step}" in log, log[-6000:]
        assert "checkpoint" in log.split(f"attempt 2 of {sft}")[0].lower(), log[-6000:]  # the stop was asked
        steps = _loss_steps(api, sft)
        assert steps == list(range(1, SFT_STEPS + 1)), steps  # every step once: the replayed ones were dropped
        state = _final_trainer_state(console, sft)
        assert state["global_step"] == SFT_STEPS, state
        assert [j for j in me.jobs() if j.get("name") == "tiny-sft"] == [
            j for j in me.jobs() if j["job_ref"] == sft]  # one job, one id
    finally:
        api.close()
        high.close()


def _attempt_ended(console: ConsoleProcess, job: str, number: int) -> float:
    from starforge.console.store.models import JobAttempt

    with console.database().read() as db:
        ended = db.scalar(select(JobAttempt.ended_at).where(JobAttempt.job_id == job, JobAttempt.number == number))
    assert ended is not None, (job, number)
    return float(ended)


def _final_trainer_state(console: ConsoleProcess, job: str) -> dict[str, Any]:
    """Return the trainer_state.json of the job's last checkpoint."""
    states = sorted(_run_dir(console, job).rglob("checkpoint-*/trainer_state.json"),
                    key=lambda p: int(p.parent.name.split("-")[1]))
    assert states, sorted(p.name for p in _run_dir(console, job).rglob("*"))
    return dict(json.loads(states[-1].read_text()))


# -- 2. crash restart -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_slots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    """A local console with two CPU slots and the default scheduling (fair share on, no preemption)."""
    console = make_console(tmp_path_factory, "sqlite", config={**DEFAULT_CONFIG, "capacity": {"cpu": 2},
                                                               "stop_grace_seconds": 2})
    console.start()
    yield console
    console.stop()


def test_a_killed_job_restarts_within_max_restarts_and_fails_beyond_them(two_slots: ConsoleProcess) -> None:
    console = two_slots
    api = _user(console, "crash")
    try:
        again = _trainer_job(api, "again", steps=4, max_restarts=1, a1={"kill": 3})
        once = _trainer_job(api, "once", steps=4, a1={"kill": 3})  # max_restarts 0, the default
        twice = _trainer_job(api, "twice", steps=4, max_restarts=1, a1={"fail": 3}, a2={"fail": 3, "quiet": 1})

        assert _status_is(api, once, "failed")["status"] == "failed"
        lives = _attempts(console, api, once)
        assert lives.count == 1 and [h[1] for h in lives.history] == ["failed"], lives
        message = _row(api, once)["message"]
        assert any(said in message for said in ("SIGKILL", "signal 9", "137")), message  # 128 + SIGKILL

        row = _status_is(api, again, "succeeded")
        lives = _attempts(console, api, again)
        assert lives.count == 2 and [h[1] for h in lives.history] == ["failed", "succeeded"], lives
        assert lives.resumed_from and Path(lives.resumed_from).name == "step_2", lives
        log = _log(api, again)
        assert "trainer: attempt 2 starts after step 2" in log and "FORGE_RESUME_STEP=2" in log, log[-4000:]
        assert f"attempt 2 of {again}" in log, log[-4000:]
        assert _loss_steps(api, again) == [1, 2, 3, 4], row  # step 3 of the first attempt was dropped, then redone

        row = _status_is(api, twice, "failed")
        lives = _attempts(console, api, twice)
        assert lives.count == 2 and [h[1] for h in lives.history] == ["failed", "failed"], lives
        said, _, last = row["message"].partition("; attempt 2: ")
        assert said == "failed after 2 attempts: attempt 1: exit code 3: RuntimeError: boom at step 3 of attempt 1", \
            row["message"]
        assert last == "exit code 3", row["message"]  # the second attempt said nothing: no line of the first one's
    finally:
        api.close()


# -- 3. console restart ---------------------------------------------------------------------------------------------

def _kill_job(console: ConsoleProcess, job: str) -> None:
    """Kill every process of a job (its launcher too), as a crash of its node would: no exit record is left."""
    run_dir = _run_dir(console, job)
    if console.sandboxed:  # the sandbox's process group holds its PID namespace's init: killing it ends them all
        os.killpg(json.loads((run_dir / "executor.json").read_text())["pid"], signal.SIGKILL)
        return
    script = int((run_dir / "work" / "pid").read_text())
    os.killpg(script, signal.SIGKILL)
    os.kill(json.loads((run_dir / "executor.json").read_text())["pid"], signal.SIGKILL)  # forge-launch


def test_a_console_restart_reattaches_a_running_job_and_resumes_one_that_died(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    console = make_console(tmp_path_factory, "sqlite", config={**DEFAULT_CONFIG, "capacity": {"cpu": 2},
                                                               "stop_grace_seconds": 2})
    console.start()
    token = console.token_for(unique("rs"))
    api = console.client(token)
    try:
        kept = _trainer_job(api, "kept", steps=4, a1={"hold": 2})
        died = _trainer_job(api, "died", steps=4, a1={"hold": 2})
        for job in (kept, died):
            _until(lambda j=job: _checkpoints(api, j), f"{job}'s checkpoint at step 2")
            # the checkpoint and the loss points leave the job in separate posts: a point still in the job's
            # buffer when both the console and the job die is gone, so wait until the console holds steps 1-2
            _until(lambda j=job: _reported_steps(api, j) >= {1, 2}, f"{job}'s loss at steps 1 and 2")
        console.stop(kill=True)  # SIGKILL: no cleanup, no goodbye
        _kill_job(console, died)
        console.start()
        api.close()
        api = console.client(token)
        _release(console, kept)
        assert _status_is(api, kept, "succeeded")["status"] == "succeeded"
        lives = _attempts(console, api, kept)
        assert lives.count == 1 and lives.resumed_from is None, lives  # re-attached: the same attempt went on
        assert _loss_steps(api, kept) == [1, 2, 3, 4]

        assert _status_is(api, died, "succeeded")["status"] == "succeeded"
        lives = _attempts(console, api, died)
        assert lives.count == 2 and lives.history[0][1] == "lost", lives
        assert lives.resumed_from and Path(lives.resumed_from).name == "step_2", lives
        assert "trainer: attempt 2 starts after step 2" in _log(api, died)
        assert _loss_steps(api, died) == [1, 2, 3, 4]
    finally:
        api.close()
        console.stop()


# -- 4. pause and resume --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("one_slot", ENGINES[:1], indirect=True)
def test_a_paused_job_checkpoints_holds_no_capacity_and_resumes(one_slot: tuple[str, ConsoleProcess]) -> None:
    _engine, console = one_slot
    api = _user(console, "pause")
    try:
        job = _trainer_job(api, "pausing", steps=6, save_every=4, a1={"hold": 3})
        _until(lambda: "holding at step 3" in _log(api, job), f"{job} reaching step 3")
        assert _control(api, job, "pause")["paused"] is True
        row = _status_is(api, job, "paused")
        assert [c["step"] for c in _checkpoints(api, job)] == [3], _log(api, job)[-4000:]  # saved when asked
        assert "asked to checkpoint: saved step 3" in _log(api, job)

        other = _trainer_job(api, "meanwhile", steps=2)  # the one slot is free while the job is paused
        assert _status_is(api, other, "succeeded")["status"] == "succeeded"
        assert _row(api, job)["status"] == "paused", row

        assert _control(api, job, "resume")["resumed"] is True
        _status_is(api, job, "succeeded")
        lives = _attempts(console, api, job)
        assert lives.count == 2 and [h[1] for h in lives.history] == ["paused", "succeeded"], lives
        assert lives.resumed_from and Path(lives.resumed_from).name == "step_3", lives
        assert "trainer: attempt 2 starts after step 3" in _log(api, job)
        assert _loss_steps(api, job) == [1, 2, 3, 4, 5, 6]
    finally:
        api.close()


# -- 5. fair share ----------------------------------------------------------------------------------------------------

def test_a_one_job_account_starts_before_the_third_run_of_a_six_job_account(two_slots: ConsoleProcess) -> None:
    console = two_slots
    sweeper, single = _user(console, "sweep"), _user(console, "single")
    try:
        sweep = [_trainer_job(sweeper, f"point{i}", steps=1, a1={"hold": 1}) for i in range(6)]
        _until(lambda: all(_row(sweeper, j)["status"] == "running" for j in sweep[:2]), "the first two runs")
        alone = _trainer_job(single, "alone", steps=1, a1={"hold": 1})
        assert _row(single, alone)["status"] == "queued"
        assert [_row(sweeper, j)["status"] for j in sweep[2:]] == ["queued"] * 4
        _release(console, sweep[0])  # one slot frees: the account that runs nothing is served first
        _status_is(single, alone, "running")
        started = [j for j in sweep if _row(sweeper, j).get("started_at")]
        assert started == sweep[:2], [_row(sweeper, j) for j in sweep]
    finally:
        for api in (sweeper, single):
            api.post("/api/jobs/cancel-all")
            api.close()
