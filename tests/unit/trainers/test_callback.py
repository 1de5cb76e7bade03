"""The trainer callback's logic, against a real `Run` and a recording ingest server (no torch in this venv).

The callback's transformers-facing class is exercised by the end-to-end TRL jobs; here a stand-in `transformers`
module (only `Trainer` and `TrainerCallback`, the two names `install` touches) checks the patching itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from starforge.runner import Run
from starforge.runner._ingest import client_from_environ
from starforge.trainers import MODEL_DIR, ReportingState, _callback, _install, metric_points, model_dir

from .conftest import RUN_ID, TOKEN, IngestServer


def make_run(ingest: IngestServer, out: Path) -> Run:
    env = {"STARFORGE_ENABLED": "1", "STARFORGE_ENDPOINT": ingest.endpoint, "STARFORGE_RUN_ID": RUN_ID,
           "STARFORGE_TOKEN": TOKEN}
    client, missing = client_from_environ(env)
    assert not missing
    return Run(client, out_dir=out, flush_interval=60)


def test_the_package_imports_without_torch_or_transformers(tmp_path: Path) -> None:
    # stand-ins that fail on import, first on the path: an eager import anywhere in the package would fail the test
    for name in ("torch", "transformers", "trl"):
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('{name} imported eagerly')\n", encoding="utf-8")
    code = "import starforge.trainers, starforge.trainers.trl_entry; print('ok')"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_trainer_logs_become_starforge_metrics() -> None:
    logs = {"loss": 1.5, "learning_rate": 2e-5, "grad_norm": 0.75, "epoch": 0.5, "eval_loss": 1.25,
            "eval_runtime": 0.1, "train_runtime": 3.0, "train_loss": 1.4, "total_flos": 9.0, "reward": 0.5,
            "rewards/chosen": -0.25, "mean_token_accuracy": 0.4, "flag": True, "note": "text", "bad": float("nan")}
    assert metric_points(logs) == {
        "train/loss": 1.5, "train/learning_rate": 2e-5, "train/grad_norm": 0.75, "eval/loss": 1.25,
        "train/reward": 0.5, "train/rewards/chosen": -0.25, "train/mean_token_accuracy": 0.4,
    }


def test_logs_checkpoints_and_model_reach_the_console_once(ingest: IngestServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "checkpoints" / "checkpoint-2").mkdir(parents=True)
    (out / "checkpoints" / "checkpoint-2" / "model.safetensors").write_bytes(b"x" * 10)
    (out / MODEL_DIR).mkdir()
    run = make_run(ingest, out)
    state = ReportingState(run)
    state.on_log({"loss": 2.0, "learning_rate": 1e-3, "grad_norm": 3.0}, 1)
    state.on_log({"loss": 1.0, "learning_rate": 5e-4, "grad_norm": 2.0}, 2)
    state.on_log({"loss": 9.0}, 2, main=False)  # another rank: never reported
    state.on_log({"eval_loss": 1.5, "epoch": 1.0}, 2)
    state.on_save(str(out / "checkpoints"), 2)
    state.on_save(str(out / "checkpoints"), 2)  # the same checkpoint again: registered once
    state.on_save(str(out / "checkpoints"), 4)  # no such folder (another rank saved it): nothing
    state.on_model_saved(out / MODEL_DIR, 2)
    state.on_model_saved(out / MODEL_DIR, 2)
    run.finish()
    points = [(p["key"], p["step"], p["value"]) for p in ingest.points()]
    assert [p for p in points if p[0] == "train/loss"] == [("train/loss", 1, 2.0), ("train/loss", 2, 1.0)]
    assert ("eval/loss", 2, 1.5) in points and ("train/grad_norm", 1, 3.0) in points
    assert ("train/learning_rate", 2, 5e-4) in points
    artifacts = [(r.body["kind"], r.body["path"], r.body.get("step"), r.body["format"]) for r in ingest.of("artifact")]
    assert artifacts == [
        ("checkpoint", str(out / "checkpoints" / "checkpoint-2"), 2, "safetensors"),
        ("model", str(out / MODEL_DIR), 2, "huggingface"),
    ]
    assert ingest.of("artifact")[0].body["size_bytes"] == 10


def test_the_model_folder_is_inside_the_job_output() -> None:
    assert model_dir({"FORGE_OUT_DIR": "/job/out"}) == Path("/job/out/model")
    assert model_dir({}) is None


class _Args:
    def __init__(self, output_dir: str) -> None:
        self.output_dir = output_dir


class _State:
    global_step = 3
    is_world_process_zero = True


def _fake_transformers() -> types.ModuleType:
    """The two names `install` uses, shaped like transformers' (a callback list, `save_model(dir, _internal_call)`)."""
    module = types.ModuleType("transformers")

    class TrainerCallback:
        pass

    class Trainer:
        def __init__(self, output_dir: str) -> None:
            self.args = _Args(output_dir)
            self.state = _State()
            self.callback_handler = types.SimpleNamespace(callbacks=[])
            self.saved: list[tuple[str | None, bool]] = []
            self.trained: list[Any] = []

        def add_callback(self, callback: Any) -> None:
            self.callback_handler.callbacks.append(callback)

        def is_world_process_zero(self) -> bool:
            return True

        def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
            self.saved.append((output_dir, _internal_call))
            Path(output_dir or self.args.output_dir).mkdir(parents=True, exist_ok=True)

        def train(self, resume_from_checkpoint: Any = None, trial: Any = None,
                  ignore_keys_for_eval: Any = None) -> str:
            self.trained.append(resume_from_checkpoint)
            return "trained"

    module.Trainer = Trainer  # type: ignore[attr-defined]
    module.TrainerCallback = TrainerCallback  # type: ignore[attr-defined]
    return module


def test_install_adds_one_callback_and_saves_the_final_model_into_the_job_output(
    ingest: IngestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake_transformers()
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setattr(_callback, "_CLASS", None)
    out = tmp_path / "out"
    monkeypatch.setenv("FORGE_OUT_DIR", str(out))
    run = make_run(ingest, out)
    assert _install.install(ReportingState(run)) is True
    assert _install.install(ReportingState(run)) is False  # idempotent: one callback per trainer
    trainer = fake.Trainer(str(tmp_path / "checkpoints"))  # type: ignore[attr-defined]
    assert len(trainer.callback_handler.callbacks) == 1
    callback = trainer.callback_handler.callbacks[0]
    assert isinstance(callback, fake.TrainerCallback)  # type: ignore[attr-defined]
    callback.on_log(trainer.args, trainer.state, None, logs={"loss": 0.5})
    trainer.save_model(str(tmp_path / "checkpoints" / "checkpoint-3"), _internal_call=True)  # a checkpoint
    trainer.save_model(trainer.args.output_dir)  # the script's final save
    assert trainer.saved == [(str(tmp_path / "checkpoints" / "checkpoint-3"), True), (str(out / MODEL_DIR), False)]
    run.finish()
    assert [(p["key"], p["step"]) for p in ingest.points()] == [("train/loss", 3)]
    assert [(r.body["kind"], r.body["path"], r.body["step"]) for r in ingest.of("artifact")] == [
        ("model", str(out / MODEL_DIR), 3)
    ]


def test_outside_a_job_the_final_save_goes_where_the_script_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake_transformers()
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setattr(_callback, "_CLASS", None)
    monkeypatch.delenv("FORGE_OUT_DIR", raising=False)
    _install.install(ReportingState(Run(None)))
    trainer = fake.Trainer(str(tmp_path / "here"))  # type: ignore[attr-defined]
    trainer.save_model(trainer.args.output_dir)
    assert trainer.saved == [(str(tmp_path / "here"), False)]


def test_the_entry_shim_runs_the_module_with_its_arguments_and_the_experiment_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starforge.trainers import trl_entry

    exp = tmp_path / "exp"
    exp.mkdir()
    seen = tmp_path / "seen.txt"
    (exp / "sf_shim_probe.py").write_text(
        "import sys, rewards_probe\n"
        f"open({str(seen)!r}, 'w').write(' '.join(sys.argv[1:]) + ' ' + rewards_probe.NAME + ' ' + __name__)\n"
    )
    (exp / "rewards_probe.py").write_text("NAME = 'found'\n")
    installed: list[bool] = []
    monkeypatch.setattr(trl_entry, "install", lambda: installed.append(True))
    monkeypatch.setenv("FORGE_EXP_DIR", str(exp))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    trl_entry.main(["sf_shim_probe", "--config", "c.yaml"])
    assert installed == [True]
    assert seen.read_text() == "--config c.yaml found __main__"
    assert sys.path[-1] == str(exp)  # appended: it never shadows the runtime's modules


def test_a_job_started_from_a_checkpoint_names_its_step(tmp_path: Path) -> None:
    from starforge.trainers.trl_entry import init_note

    (tmp_path / "trainer_state.json").write_text('{"global_step": 6, "log_history": []}')
    assert init_note(str(tmp_path)) == f"[starforge] starting from checkpoint-6 ({tmp_path})"
    assert init_note(str(tmp_path / "absent")) == f"[starforge] starting from {tmp_path / 'absent'}"
