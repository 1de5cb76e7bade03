"""`check_cluster_paths`: a cluster-path base model lies in a folder under `model_roots`; data paths need a dataset."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.console.services.admission.checks import check_cluster_paths

from .contexts import context, job, triples

NO_ROOTS_HINT = ("use a hub model id (e.g. Qwen/Qwen3-8B); to serve models from folders of the console machine, "
                 "its operator lists them as model_roots in the console configuration")


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    """Return (the state folder, a model root holding the folder `qwen`)."""
    (tmp_path / "models" / "qwen").mkdir(parents=True)
    (tmp_path / "state").mkdir()
    return tmp_path / "state", tmp_path / "models"


@pytest.mark.parametrize("base", ["Qwen/Qwen3-8B", "gpt2", "models/qwen", "alice/qwen-ft@v1"])
def test_a_base_that_is_no_cluster_path_passes_without_model_roots(base: str) -> None:
    assert check_cluster_paths(context(job(spec__model={"base": base}))) == []


def test_a_folder_under_a_model_root_passes(roots: tuple[Path, Path]) -> None:
    state, models = roots
    ctx = context(job(spec__model={"base": str(models / "qwen")}), state_dir=state,
                  settings__model_roots=(str(models),))
    assert check_cluster_paths(ctx) == []


def test_a_cluster_path_without_model_roots_is_refused() -> None:
    [problem] = check_cluster_paths(context(job(spec__model={"base": "/models/qwen"})))
    assert triples([problem]) == [("spec.model.base", "model_path_forbidden", NO_ROOTS_HINT)]
    assert problem.message == "this console does not serve base models from its own folders (no model_roots)"
    assert problem.data == {"got": "/models/qwen", "allowed": []}


@pytest.mark.parametrize(("where", "refusal"), [
    ("elsewhere", "{base} is not inside the console's model_roots"),
    ("models/missing", "{base} is not a folder on the console machine"),
    ("state/models", "{base} is not inside the console's model_roots"),
])
def test_a_cluster_path_outside_the_roots_or_no_folder_is_refused_naming_the_roots(
        roots: tuple[Path, Path], where: str, refusal: str) -> None:
    state, models = roots
    base = str(models.parent / where)
    ctx = context(job(spec__model={"base": base}), state_dir=state, settings__model_roots=(str(models),))
    [problem] = check_cluster_paths(ctx)
    assert triples([problem]) == [("spec.model.base", "model_path_forbidden",
                                   f"use a hub model id (e.g. Qwen/Qwen3-8B) or a folder under {models}")]
    assert problem.message == refusal.format(base=base)
    assert problem.data == {"got": base, "allowed": [str(models)]}


def test_a_model_root_around_the_state_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "state" / "m").mkdir(parents=True)
    base = str(tmp_path / "state" / "m")
    ctx = context(job(spec__model={"base": base}), state_dir=tmp_path / "state", settings__model_roots=(str(tmp_path),))
    [problem] = check_cluster_paths(ctx)
    assert (problem.field, problem.code, problem.message) == (
        "spec.model.base", "model_path_forbidden", f"{base} overlaps the console's state folder")


def test_a_data_path_with_its_dataset_passes() -> None:
    data = {"train": {"dataset": "alice/gsm8k@v1", "path": "train.jsonl"},
            "validation": {"dataset": "alice/gsm8k@v1", "path": "test.jsonl"}}
    assert check_cluster_paths(context(job(spec__data=data))) == []


def test_a_data_path_without_a_dataset_is_refused_at_its_path_with_the_push_command() -> None:
    ctx = context(job(spec__data={"train": {"path": "train.jsonl"}, "validation": {"path": "/data/val.jsonl"}}))
    problems = check_cluster_paths(ctx)
    assert triples(problems) == [
        ("spec.data.train.path", "data_path_unregistered",
         "push the data with `sf dataset push PATH NAME@VERSION`, then pass --train-dataset OWNER/NAME@VERSION[:FILE]"),
        ("spec.data.validation.path", "data_path_unregistered",
         "push the data with `sf dataset push PATH NAME@VERSION`, then pass --val-dataset OWNER/NAME@VERSION[:FILE]"),
    ]
    assert [p.message for p in problems] == [
        "'train.jsonl' names no dataset: jobs read registered datasets, never a host path",
        "'/data/val.jsonl' names no dataset: jobs read registered datasets, never a host path",
    ]
    assert [p.data for p in problems] == [{"got": "train.jsonl"}, {"got": "/data/val.jsonl"}]


def test_a_base_model_and_data_path_problems_are_all_reported() -> None:
    ctx = context(job(spec__model={"base": "/models/qwen"}, spec__data={"train": {"path": "t.jsonl"}}))
    assert [p.field for p in check_cluster_paths(ctx)] == ["spec.model.base", "spec.data.train.path"]
