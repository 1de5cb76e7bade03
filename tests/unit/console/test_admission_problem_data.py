"""Policy checks fill a problem's `data` (allowlist, profiles, series, quota, plugin digest) with documented keys."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

from starforge.console.services.accounts.credentials import UserView
from starforge.console.services.admission.checks import (
    check_image,
    check_init_from,
    check_plugins,
    check_profiles,
    check_quota,
)
from starforge.console.services.admission.context import AdmissionContext, Resolutions
from starforge.console.services.quota.caps import QuotaView
from starforge.console.services.quota.policy import Ledger
from starforge.console.services.registries.plugins import PluginView
from starforge.console.settings import Settings
from starforge.contract import DATA_KEYS, Problem, ProfileEntry, parse

_DOC: dict[str, Any] = {
    "apiVersion": "forge/v2", "kind": "TrainingJob", "metadata": {"name": "toy"},
    "spec": {"recipe": {"name": "tinyrl/grpo", "version": "1.0.0", "digest": "sha256:" + "0" * 64},
             "source": {"exp": "experiments/toy"},
             "framework": {"kind": "tinyrl", "version": "1.0.0", "runtime_id": "tinyrl-1.0.0",
                           "image": "team/trainer:1"},
             "resources": {"pools": [{"name": "a", "series": "b300", "nodes": 2, "gpus_per_node": 8}]},
             "plugins": [{"id": "alice/patch", "version": "1.0", "digest": "sha256:" + "a" * 64}]},
    "provenance": {"core_version": "0.4.0"},
}


def _ctx(tmp_path: Path, **quota: Any) -> AdmissionContext:
    parsed = parse(copy.deepcopy(_DOC))
    assert parsed.spec is not None, parsed.problems
    settings = Settings(state_dir=tmp_path, image_allowlist=("nvcr.io", "registry.internal:5000"),
                        profiles=(ProfileEntry("h200", "h200", 1, 8), ProfileEntry("cpu", "cpu", 1, 1)))
    caps = {"max_concurrent_gpus": 8, "max_concurrent_jobs": 0, "daily_gpu_hours": 10.0, "max_storage_gb": 0.0,
            **quota}
    return AdmissionContext(spec=parsed.spec, user=UserView(1, "alice", "user", "", False), settings=settings,
                            profile="h100:8", quota=QuotaView(**caps), ledger=Ledger(10.0, used=12.5),
                            resolutions=Resolutions())


def _documented(problems: list[Problem]) -> dict[str, dict[str, Any]]:
    for problem in problems:
        assert problem.data and set(problem.data) <= set(DATA_KEYS), problem
    return {p.code: dict(p.data) for p in problems}


def test_a_refused_image_names_its_registry_and_the_allowlist(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    assert _documented(check_image(ctx))["image_not_allowed"] == {
        "got": "team/trainer:1", "registry": "docker.io", "allowed": ["nvcr.io", "registry.internal:5000"]}
    closed = replace(ctx, settings=replace(ctx.settings, image_allowlist=()))
    assert _documented(check_image(closed))["image_not_allowed"]["allowed"] == []


def test_profile_and_series_refusals_list_what_would_be_accepted(tmp_path: Path) -> None:
    data = _documented(check_profiles(_ctx(tmp_path, allowed_profiles=("cpu", "a100"))))
    assert data["profile_unknown"] == {"got": "h100", "allowed": ["cpu"]}
    assert data["profile_not_allowed"] == {"got": "h100", "allowed": ["cpu", "a100"]}
    assert data["series_unknown"] == {"got": "b300", "allowed": ["cpu", "h200"]}
    assert _documented(check_profiles(_ctx(tmp_path)))["profile_unknown"]["allowed"] == ["cpu", "h200"]


def test_quota_refusals_carry_the_numbers(tmp_path: Path) -> None:
    data = _documented(check_quota(_ctx(tmp_path)))
    assert data["quota_exceeded"] == {"requested": 16, "limit": 8}
    # 16 GPUs × the whole budget spread over them (no other wall-time limit): 10 GPU hours needed, none left
    assert data["quota_exhausted"] == {"used": 12.5, "limit": 10.0, "reserved": 0.0, "needed": 10.0}


def test_a_plugin_digest_mismatch_gives_both_digests(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    record = PluginView("alice", "patch", "1.0", "patch", "sha256:" + "b" * 64, "", True, "public", "", 0, "alice", 0.0)
    ctx = replace(ctx, resolutions=Resolutions(plugins=(record,)))
    assert _documented(check_plugins(ctx))["plugin_digest_mismatch"] == {
        "expected": "sha256:" + "b" * 64, "got": "sha256:" + "a" * 64}


def test_an_unknown_init_from_points_to_the_run_s_artifacts(tmp_path: Path) -> None:
    doc = copy.deepcopy(_DOC)
    doc["spec"]["model"] = {"init_from": "run/r-0000000000/checkpoint"}
    parsed = parse(doc)
    assert parsed.spec is not None, parsed.problems
    [problem] = check_init_from(replace(_ctx(tmp_path), spec=parsed.spec))
    assert (problem.field, problem.code) == ("spec.model.init_from", "artifact_unknown")
    assert "`sf job artifacts r-0000000000`" in problem.hint
