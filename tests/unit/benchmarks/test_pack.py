"""The pack reader: the builtin pack reads; a pack naming a hub dataset, holding code, or reaching outside its
folder is refused at the field to fix, with every problem at once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from starforge.benchmarks import BUILTIN_ROOT, PackRefused, builtin_pack, read_pack


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "pack"
    shutil.copytree(BUILTIN_ROOT, root)
    return root


def _refused(root: Path) -> dict[str, str]:
    with pytest.raises(PackRefused) as caught:
        read_pack(root)
    assert all(p.hint for p in caught.value.problems), caught.value.problems
    return {p.field: p.code for p in caught.value.problems}


def test_the_builtin_pack_offers_its_two_suites() -> None:
    pack = builtin_pack()
    assert (pack.name, pack.version) == ("basic", "1.0.0")
    assert [(s.name, s.task, s.metrics) for s in pack.suites] == [
        ("basic-arithmetic", "basic_arithmetic", ("exact_match",)), ("basic-choice", "basic_choice", ("acc",))]
    assert all(s.description for s in pack.suites)


def test_a_task_naming_a_hub_dataset_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    task = root / "basic_choice.yaml"
    task.write_text(task.read_text().replace("dataset_path: json", "dataset_path: openai/gsm8k"))
    assert _refused(root) == {"basic_choice.yaml.dataset_path": "hub_dataset"}


@pytest.mark.parametrize("path", ["../arithmetic.jsonl", "/etc/passwd", "https://example.com/x.jsonl",
                                  "hf://datasets/x/y.jsonl", "missing.jsonl"])
def test_a_data_file_outside_the_pack_is_refused(tmp_path: Path, path: str) -> None:
    root = _copy(tmp_path)
    task = root / "basic_choice.yaml"
    task.write_text(task.read_text().replace("test: choice.jsonl", f"test: {path!r}"))
    assert _refused(root) == {"basic_choice.yaml.dataset_kwargs.data_files": "outside_pack" if path != "missing.jsonl"
                              else "missing_file"}


def test_a_link_out_of_the_pack_and_function_tags_are_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "choice.jsonl").unlink()
    (root / "choice.jsonl").symlink_to("/etc/hostname")
    task = root / "basic_arithmetic.yaml"
    task.write_text(task.read_text() + "process_docs: !function utils.process\n")
    found = _refused(root)
    assert found["choice.jsonl"] == "outside_pack"
    assert found["basic_arithmetic.yaml"] == "yaml_refused"
    assert found["basic_choice.yaml.dataset_kwargs.data_files"] == "missing_file"


def test_the_manifest_is_checked_suite_by_suite(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "plugin.yaml").write_text(
        "name: basic\nversion: '2'\nkind: plugin\nsuites:\n"
        "  - {name: a, task: basic_choice, metrics: [acc]}\n"
        "  - {name: a, task: basic_choice, metrics: [acc]}\n"
        "  - {name: b, task: nowhere, metrics: [acc]}\n"
        "  - {name: c, task: basic_choice, metrics: [bleu]}\n"
        "  - {name: '../d', task: basic_choice, metrics: []}\n")
    assert _refused(root) == {
        "plugin.yaml.kind": "invalid_request", "plugin.yaml.suites[1].name": "duplicate",
        "plugin.yaml.suites[2].task": "unknown_task", "plugin.yaml.suites[3].metrics": "unknown_metric",
        "plugin.yaml.suites[4].name": "not_a_safe_segment", "plugin.yaml.suites[4].metrics": "invalid_request"}


def test_a_folder_without_a_manifest_is_refused(tmp_path: Path) -> None:
    assert _refused(tmp_path) == {"bundle": "invalid_request"}


def test_a_pack_holds_no_code(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "exact").mkdir()
    (root / "exact" / "exact.py").write_text("import os\n")  # what evaluate.load("exact") would run from the pack
    (root / "run.sh").write_text("#!/bin/sh\n")
    assert _refused(root) == {"exact/exact.py": "not_pack_data", "run.sh": "not_pack_data"}


def test_a_group_lists_the_packs_own_tasks_and_its_inline_tasks_are_checked(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "group.yaml").write_text(
        "group: basic_all\ntask:\n  - basic_choice\n  - gsm8k\n"
        "  - {task: inline, dataset_path: openai/gsm8k, output_type: generate_until}\n")
    assert _refused(root) == {"group.yaml.task[1]": "unknown_task", "group.yaml.task[2].dataset_path": "hub_dataset"}
    (root / "group.yaml").write_text("group: basic_all\ntask: [basic_choice, basic_arithmetic]\n")
    manifest = (root / "plugin.yaml").read_text() + ("  - {name: basic-all, task: basic_all, metrics: [acc], "
                                                     "description: both}\n")
    (root / "plugin.yaml").write_text(manifest)
    assert [s.task for s in read_pack(root).suites] == ["basic_arithmetic", "basic_choice", "basic_all"]


def test_data_paths_are_relative_to_the_packs_root_and_includes_to_their_yaml(tmp_path: Path) -> None:
    """The job runs lm-eval in the pack's folder (datasets reads data_files from there); lm-eval resolves an include
    beside the YAML that names it."""
    root = _copy(tmp_path)
    (root / "tasks").mkdir()
    for name in ("basic_choice.yaml", "choice.jsonl"):
        (root / name).rename(root / "tasks" / name)
    assert _refused(root) == {"tasks/basic_choice.yaml.dataset_kwargs.data_files": "missing_file"}
    task = root / "tasks" / "basic_choice.yaml"
    task.write_text(task.read_text().replace("test: choice.jsonl", "test: tasks/choice.jsonl") + "include: base.yaml\n")
    (root / "tasks" / "base.yaml").write_text("output_type: multiple_choice\n")
    assert [s.task for s in read_pack(root).suites] == ["basic_arithmetic", "basic_choice"]
