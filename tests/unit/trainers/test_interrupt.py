"""The Transformers side of "checkpoint, then stop" and resume, free of transformers: the callback's decision at each
step end, the skipped final save, and `train()` resuming from `$FORGE_RESUME_FROM` (a stand-in `transformers`)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from starforge.runner import Run
from starforge.runner.preempt import PreemptWatch
from starforge.trainers import MODEL_DIR, ReportingState, _callback, _install

from .conftest import IngestServer
from .test_callback import _fake_transformers, make_run


class _Control:
    should_save = False
    should_training_stop = False


def _state(tmp_path: Path, run: Any = None, **env: str) -> tuple[ReportingState, list[str], dict[str, str]]:
    environ = {"FORGE_PREEMPT_FILE": str(tmp_path / "preempt"), **env}
    lines: list[str] = []
    return ReportingState(run, watch=PreemptWatch(environ), environ=environ, say=lines.append), lines, environ


def test_the_step_end_stops_once_the_preempt_file_exists_and_says_so_once(tmp_path: Path) -> None:
    state, lines, _ = _state(tmp_path)
    assert state.on_step_end(1) is False and state.interrupted_at is None
    (tmp_path / "preempt").write_text("preempted\n")
    assert state.on_step_end(2) is True and state.on_step_end(3) is True
    assert state.interrupted_at == 2
    assert lines == ["[starforge] checkpoint at step 2, stopping: the console asked"]


def test_another_rank_says_nothing_and_every_rank_joins_the_agreement_at_every_step(tmp_path: Path) -> None:
    state, lines, _ = _state(tmp_path)
    joined: list[bool] = []

    def agree(asked: bool) -> bool:  # another rank was asked at step 4
        joined.append(asked)
        return len(joined) == 4

    assert [state.on_step_end(step, main=False, agree=agree) for step in (1, 2, 3, 4)] == [False] * 3 + [True]
    assert joined == [False] * 4 and state.interrupted_at == 4 and lines == []


def test_sigusr1_after_install_stops_the_trainer_at_its_next_step_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake_transformers()
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setattr(_callback, "_CLASS", None)
    state, lines, _ = _state(tmp_path, Run(None))
    _install.install(state)
    assert state.watch.installed
    trainer = fake.Trainer(str(tmp_path / "checkpoints"))  # type: ignore[attr-defined]
    [callback] = trainer.callback_handler.callbacks
    control = _Control()
    assert callback.on_step_end(trainer.args, trainer.state, control) is control
    assert not control.should_save and not control.should_training_stop
    os.kill(os.getpid(), signal.SIGUSR1)
    callback.on_step_end(trainer.args, trainer.state, control)
    assert control.should_save and control.should_training_stop  # the Trainer saves checkpoint-3, then stops
    assert lines == ["[starforge] checkpoint at step 3, stopping: the console asked"]


def test_an_interrupted_run_saves_and_registers_no_final_model(
    ingest: IngestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake_transformers()
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setattr(_callback, "_CLASS", None)
    out = tmp_path / "out"
    monkeypatch.setenv("FORGE_OUT_DIR", str(out))
    run = make_run(ingest, out)
    state, lines, _ = _state(tmp_path, run)
    _install.install(state)
    trainer = fake.Trainer(str(tmp_path / "checkpoints"))  # type: ignore[attr-defined]
    (tmp_path / "preempt").touch()
    trainer.callback_handler.callbacks[0].on_step_end(trainer.args, trainer.state, _Control())
    trainer.save_model(str(tmp_path / "checkpoints" / "checkpoint-3"), _internal_call=True)  # the checkpoint: saved
    trainer.save_model(trainer.args.output_dir)  # the script's final save: skipped
    run.finish()
    assert trainer.saved == [(str(tmp_path / "checkpoints" / "checkpoint-3"), True)]
    assert not (out / MODEL_DIR).exists() and ingest.of("artifact") == []
    assert lines[-1] == ("[starforge] the run stopped at step 3 to checkpoint; the final model is not saved "
                         "(a later attempt resumes from that checkpoint)")


def _installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> tuple[Any, list[str]]:
    fake = _fake_transformers()
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setattr(_callback, "_CLASS", None)
    state, lines, _ = _state(tmp_path, Run(None), **env)
    _install.install(state)
    return fake.Trainer(str(tmp_path / "checkpoints")), lines  # type: ignore[attr-defined]


def test_the_first_train_call_resumes_from_the_console_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = tmp_path / "checkpoints" / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    trainer, lines = _installed(tmp_path, monkeypatch, FORGE_RESUME_FROM=str(checkpoint), FORGE_RESUME_STEP="4",
                                FORGE_ATTEMPT="2")
    assert trainer.train() == "trained"
    trainer.train()  # a second training in the same script starts where it was told
    assert trainer.trained == [str(checkpoint), None]
    assert lines == ["[starforge] resuming from checkpoint-4 (attempt 2)"]


def test_without_a_step_variable_the_step_comes_from_the_trainer_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "trainer_state.json").write_text('{"global_step": 6}')
    trainer, lines = _installed(tmp_path, monkeypatch, FORGE_RESUME_FROM=str(checkpoint))
    trainer.train(resume_from_checkpoint=False)  # False is "none": the console's checkpoint is used
    assert trainer.trained == [str(checkpoint)] and lines == ["[starforge] resuming from checkpoint-6"]


def test_a_checkpoint_the_script_names_wins_and_a_missing_folder_starts_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = tmp_path / "checkpoint-4"
    checkpoint.mkdir()
    trainer, lines = _installed(tmp_path, monkeypatch, FORGE_RESUME_FROM=str(checkpoint))
    trainer.train("mine")
    trainer.train()
    assert trainer.trained == ["mine", None] and lines == []

    missing = tmp_path / "gone"
    trainer, lines = _installed(tmp_path, monkeypatch, FORGE_RESUME_FROM=str(missing))
    trainer.train()
    assert trainer.trained == [None]
    assert lines == [f"[starforge] warning: FORGE_RESUME_FROM={missing} is not a folder; "
                     "training starts from the beginning"]


def test_no_resume_variable_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trainer, lines = _installed(tmp_path, monkeypatch)
    trainer.train()
    trainer.train(True)
    assert trainer.trained == [None, True] and lines == []


def test_the_entry_shim_names_the_resume_not_the_start_on_a_later_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from starforge.trainers import trl_entry

    (tmp_path / "sf_probe_module.py").write_text("")
    monkeypatch.setattr(trl_entry, "install", lambda: None)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setenv("FORGE_INIT_FROM", str(tmp_path / "base"))
    monkeypatch.delenv("FORGE_EXP_DIR", raising=False)
    monkeypatch.setenv("FORGE_RESUME_FROM", str(tmp_path / "checkpoint-4"))
    trl_entry.main(["sf_probe_module"])
    assert "starting from" not in capsys.readouterr().out
    monkeypatch.delenv("FORGE_RESUME_FROM")
    sys.modules.pop("sf_probe_module", None)
    trl_entry.main(["sf_probe_module"])
    assert f"[starforge] starting from {tmp_path / 'base'}" in capsys.readouterr().out

