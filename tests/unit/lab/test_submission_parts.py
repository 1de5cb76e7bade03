"""The pieces `sf submit` puts around `build_jobspec`: handshake report, bundle, spec file, plugin lock, registry."""

from __future__ import annotations

import copy
import gzip
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from starforge import __version__
from starforge.contract import JobSpec, ProfileEntry
from starforge.lab import (
    SPEC_FILE,
    SubmitOptions,
    build_jobspec,
    check_handshake,
    load_registry,
    offline_registry,
    pack_submission,
    read_plugins_lock,
    save_registry,
    write_spec_file,
)
from starforge.recipes import Catalog, catalog_digest
from tests.unit.lab.conftest import REGISTRY, commit, git


@pytest.fixture
def job(lab: Path, builtin: Catalog) -> JobSpec:
    built = build_jobspec(lab, "toy", SubmitOptions(profiles=("cpu",)), profiles=REGISTRY, catalog=builtin)
    assert built.job is not None, built.problems
    return built.job


def _payload(builtin: Catalog, **entry_changes: Any) -> dict[str, Any]:
    payload = copy.deepcopy(builtin.payload())
    for entry in payload["recipes"]:
        if entry["name"] == "tinyrl/grpo":
            entry.update(entry_changes)
    payload["catalog_digest"] = catalog_digest(payload["recipes"])
    return payload


def test_a_matching_catalog_passes(builtin: Catalog, job: JobSpec) -> None:
    report = check_handshake(builtin.payload(), job, exp_label="toy", local_versions=["1.0.0"])
    assert report.ok and report.rows == []


def test_a_different_bundle_shows_both_values_and_the_fix(builtin: Catalog, job: JobSpec) -> None:
    payload = _payload(builtin, version="2.0.0", digest="sha256:" + "b" * 64)
    report = check_handshake(payload, job, exp_label="toy", local_versions=["1.0.0"])
    [problem] = report.problems
    assert (problem.field, problem.code) == ("spec.recipe.version", "recipe_version_mismatch")
    assert "server 2.0.0, cli 1.0.0" in problem.message
    assert problem.hint.startswith(f"upgrade sf (this client is {__version__})")
    assert ("recipe.version", "2.0.0", "1.0.0") in report.rows
    assert ("recipe.digest", "sha256:" + "b" * 64, job.spec.recipe.digest) in report.rows


def test_an_old_client_is_told_to_upgrade_with_both_versions(builtin: Catalog, job: JobSpec) -> None:
    payload = _payload(builtin)
    payload["core"] = {"version": "0.5.0", "requirement": ">=0.5,<0.6"}
    report = check_handshake(payload, job, exp_label="toy")
    [problem] = report.problems
    assert problem.code == "core_version_incompatible"
    assert problem.hint == f"upgrade sf: this client is {__version__}, the catalog needs >=0.5,<0.6"
    assert report.rows == [("core version", ">=0.5,<0.6", __version__)]
    recipe_range = check_handshake(_payload(builtin, core_requires=">=0.9"), job, exp_label="toy")
    assert recipe_range.problems[0].field == "provenance.core_version"
    assert recipe_range.problems[0].hint == f"upgrade sf: this client is {__version__}, the catalog needs >=0.9"


def test_a_framework_version_the_console_lacks_points_at_recipe_upgrade(builtin: Catalog, job: JobSpec) -> None:
    runtime = {"default_version": "1.1.0", "versions": {"1.1.0": {"runtime_id": "tinyrl-1.1.0"}}}
    payload = _payload(builtin, supported_framework_versions=["1.1.0"], runtime=runtime)
    reachable = check_handshake(payload, job, exp_label="toy", local_versions=["1.0.0", "1.1.0"])
    assert reachable.problems[0].code == "framework_version_unsupported"
    assert reachable.problems[0].hint == "run `sf recipe upgrade toy --framework-version 1.1.0`"
    assert ("framework.versions", "1.1.0", "1.0.0") in reachable.rows
    unreachable = check_handshake(payload, job, exp_label="toy", local_versions=["1.0.0"])
    assert unreachable.problems[0].hint.startswith("upgrade sf: this client's tinyrl/grpo runs")


def test_the_bundle_holds_the_experiment_and_shared_folders_but_not_the_spec(lab: Path, job: JobSpec) -> None:
    (lab / "common" / "reward.py").write_text("def reward(): return 1\n")
    (lab / "experiments" / "toy" / "paper.pdf").write_bytes(b"%PDF")
    (lab / "experiments" / "toy" / ".env").write_text("TOKEN=x\n")  # ignored by the lab's .gitignore
    commit(lab)
    write_spec_file(lab, '{"x": 1}\n')  # what sf submit writes for the user before packing
    packed = pack_submission(lab, "experiments/toy")
    assert packed.problems == [] and packed.data is not None and packed.info is not None
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(packed.data))) as tar:
        names = tar.getnames()
    assert names == packed.files
    assert not [n for n in names if n.startswith(".starforge/")]  # the spec travels once, in X-Forge-Meta
    assert (lab / SPEC_FILE).read_text() == '{"x": 1}\n'
    assert "common/reward.py" in names and "experiments/toy/config.yaml" in names
    assert "experiments/toy/.env" not in names and "experiments/toy/paper.pdf" not in names
    assert "experiments/toy/paper.pdf" in packed.dropped
    assert packed.info.files == len(names)


def test_the_bundle_digest_depends_on_the_files_not_on_the_spec(lab: Path) -> None:
    (lab / ".starforge").mkdir(exist_ok=True)
    (lab / ".starforge" / "jobspec.json").write_text('{"spec": 1}\n')
    first = pack_submission(lab, "experiments/toy")
    (lab / ".starforge" / "jobspec.json").write_text('{"spec": 2}\n')  # the spec travels in X-Forge-Meta only
    second = pack_submission(lab, "experiments/toy")
    assert first.info is not None and second.info is not None
    assert first.data == second.data and first.info.sha256 == second.info.sha256
    assert not any(name.startswith(".starforge/") for name in first.files)
    checked = pack_submission(lab, "experiments/toy", check_only=True)  # checks the selection, packs nothing
    assert checked.data is None and checked.files == first.files and checked.problems == []


def test_a_tracked_secret_refuses_the_whole_bundle(lab: Path) -> None:
    (lab / "experiments" / "toy" / ".env").write_text("TOKEN=x\n")
    git(lab, "add", "-f", "experiments/toy/.env")
    commit(lab)
    packed = pack_submission(lab, "experiments/toy")
    assert packed.data is None
    [problem] = packed.problems
    assert (problem.field, problem.code) == ("bundle", "bundle_unsafe")
    assert "experiments/toy/.env looks like a secret" in problem.message and problem.hint


def test_the_spec_file_never_dirties_the_lab(lab: Path, job: JobSpec) -> None:
    target = write_spec_file(lab, "{}\n")
    assert target == lab / ".starforge" / "jobspec.json" and target.read_text() == "{}\n"
    (lab / ".gitignore").write_text("")  # even a lab whose .gitignore forgot .starforge/
    commit(lab)
    write_spec_file(lab, "{}\n")
    assert git(lab, "status", "--porcelain") == ""


def test_plugins_lock_reading(tmp_path: Path) -> None:
    assert read_plugins_lock(tmp_path) == ([], [])
    (tmp_path / "plugins.lock.json").write_text(json.dumps({"apiVersion": "forge/plugins-lock/v0", "plugins": []}))
    _, problems = read_plugins_lock(tmp_path)
    assert [(p.field, p.code) for p in problems] == [("plugins.lock.json", "plugin_lock_invalid")]
    (tmp_path / "plugins.lock.json").write_text(json.dumps(
        {"apiVersion": "forge/plugins-lock/v1", "plugins": [{"id": "a/b", "version": "1"}]}))
    assert read_plugins_lock(tmp_path)[1][0].code == "plugin_lock_invalid"
    (tmp_path / "plugins.lock.json").write_text("not json")
    assert read_plugins_lock(tmp_path)[1][0].code == "plugin_lock_invalid"


def test_the_registry_cache_round_trips(tmp_path: Path) -> None:
    assert load_registry(tmp_path, "http://a") is None
    save_registry(tmp_path, "http://a", REGISTRY)
    save_registry(tmp_path, "http://b", [ProfileEntry("x", "x", 2, 4, "X")])
    assert load_registry(tmp_path, "http://a") == list(REGISTRY)
    assert load_registry(tmp_path, "http://b") == [ProfileEntry("x", "x", 2, 4, "X")]
    assert (tmp_path / "cache" / "profiles.json").stat().st_mode & 0o777 == 0o600


def test_the_offline_registry(tmp_path: Path) -> None:
    typed, cached = offline_registry(tmp_path, "http://a", ["h200:16", "actor=h200:4", "cpu", "x:y"])
    assert not cached
    assert typed == [ProfileEntry("h200", "h200", 1, 16), ProfileEntry("cpu", "cpu", 1, 1), ProfileEntry("x", "x", 1, 1)]
    save_registry(tmp_path, "http://a", REGISTRY)
    assert offline_registry(tmp_path, "http://a", ["h200:16"]) == (list(REGISTRY), True)
    assert offline_registry(tmp_path, None, ["h200"])[1] is False

