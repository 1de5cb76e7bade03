"""Golden KubeRay RayJob manifests: a cpu:1 tinyrl job, an h200:16 job (two 8-GPU workers) and a two-pool spec.

After a deliberate change, regenerate with
`STARFORGE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/console/kuberay` and review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from starforge.console.settings import SettingsError, load_settings
from starforge.contract import JobSpec, parse
from starforge.engines.kuberay_manifest import (
    DEFAULT_IMAGE,
    KubeRayConfig,
    RenderJob,
    RenderRefused,
    kuberay_config_from,
    manifest_name,
    render_rayjob,
    run_secret_name,
)

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("STARFORGE_UPDATE_GOLDEN") == "1"
DIGEST = "sha256:" + "ab" * 32
DNS_1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
CONFIG = kuberay_config_from({
    "namespace": "ml-jobs",
    "image": "registry.internal:5000/starforge/ray:2.49",
    "service_account": "starforge-jobs",
    "node_selectors": {"h200": {"nvidia.com/gpu.product": "NVIDIA-H200"},
                       "h100": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
})


def _spec(recipe: str, kind: str, pools: list[dict[str, Any]], roles: dict[str, str] | None = None) -> JobSpec:
    resources: dict[str, Any] = {"pools": pools}
    if roles:
        resources["roles"] = roles
    doc = {
        "apiVersion": "forge/v2",
        "kind": "TrainingJob",
        "metadata": {"name": "toy", "project": "lab", "owner": "alice"},
        "spec": {
            "recipe": {"name": recipe, "version": "1.0.0", "digest": DIGEST},
            "source": {"exp": "experiments/toy"},
            "framework": {"kind": kind, "version": "1.0.0"},
            "resources": resources,
        },
        "provenance": {"core_version": "0.3.56", "git_commit": "3f2a9c1", "config_sha": "none"},
    }
    parsed = parse(doc)
    assert parsed.spec is not None, parsed.problems
    return parsed.spec


CASES: dict[str, tuple[JobSpec, RenderJob]] = {
    "tinyrl_cpu1": (
        _spec("tinyrl/grpo", "tinyrl", [{"name": "all", "nodes": 1, "gpus_per_node": 1, "series": "cpu"}]),
        RenderJob(job_id="r-0a1b2c3d4e", owner="alice", profile="cpu", base_url="https://console.lab.example")),
    "h200_16": (
        _spec("verl/grpo", "verl", [{"name": "all", "nodes": 2, "gpus_per_node": 8, "series": "h200"}]),
        RenderJob(job_id="r-5f6g7h8i9j", owner="alice", profile="h200:16", base_url="https://console.lab.example",
                  wall_seconds=48 * 3600)),
    "two_pools": (
        _spec("openrlhf/ppo", "openrlhf",
              [{"name": "actor", "nodes": 2, "gpus_per_node": 8, "series": "h200"},
               {"name": "rollout", "nodes": 1, "gpus_per_node": 4, "series": "h100"}],
              roles={"actor": "actor", "rollout": "rollout"}),
        RenderJob(job_id="r-kl0mn1op2q", owner="alice", profile="h200:16+h100:4",
                  base_url="https://console.lab.example", wall_seconds=3600)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_manifest_matches_golden(case: str) -> None:
    spec, job = CASES[case]
    text = render_rayjob(spec, job, CONFIG)
    golden = GOLDEN / f"{case}.yaml"
    if UPDATE:
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


def _workers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc["spec"]["rayClusterSpec"]["workerGroupSpecs"])


def test_pools_become_worker_groups_with_gpu_limits_and_node_selectors() -> None:
    spec, job = CASES["two_pools"]
    doc = yaml.safe_load(render_rayjob(spec, job, CONFIG))
    shape = [(w["groupName"], w["replicas"], w["template"]["spec"]["containers"][0]["resources"]["limits"],
              w["template"]["spec"]["nodeSelector"]) for w in _workers(doc)]
    assert shape == [("actor", 2, {"nvidia.com/gpu": 8}, {"nvidia.com/gpu.product": "NVIDIA-H200"}),
                     ("rollout", 1, {"nvidia.com/gpu": 4}, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})]
    head = doc["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert "resources" not in head  # the head group carries no accelerators
    assert doc["spec"]["activeDeadlineSeconds"] == 3600 and doc["spec"]["shutdownAfterJobFinishes"] is True


def test_cpu_series_asks_for_cpus_and_no_wall_limit_means_no_deadline() -> None:
    spec, job = CASES["tinyrl_cpu1"]
    doc = yaml.safe_load(render_rayjob(spec, job, CONFIG))
    (worker,) = _workers(doc)
    assert worker["template"]["spec"]["containers"][0]["resources"]["limits"] == {"cpu": 1}
    assert "nodeSelector" not in worker["template"]["spec"]
    assert "activeDeadlineSeconds" not in doc["spec"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_token_is_a_secret_reference_never_a_value(case: str) -> None:
    spec, job = CASES[case]
    text = render_rayjob(spec, job, CONFIG)
    assert "from the run Secret" not in text  # the placeholder spec_to_env was given never leaves the renderer
    doc = yaml.safe_load(text)
    env = yaml.safe_load(doc["spec"]["runtimeEnvYAML"])["env_vars"]
    assert "STARFORGE_TOKEN" not in env and env["STARFORGE_ENABLED"] == "1"
    assert env["STARFORGE_ENDPOINT"] == "https://console.lab.example/api/ingest" and env["STARFORGE_RUN_ID"] == job.job_id
    fetch = doc["spec"]["submitterPodTemplate"]["spec"]["initContainers"][0]
    refs = [e["valueFrom"]["secretKeyRef"] for e in fetch["env"]]
    assert refs == [{"name": run_secret_name(job.job_id), "key": "token"}]
    assert f"https://console.lab.example/api/runs/{job.job_id}/workdir" in fetch["command"]
    cluster = doc["spec"]["rayClusterSpec"]
    pods = [cluster["headGroupSpec"]["template"]] + [w["template"] for w in cluster["workerGroupSpecs"]]
    for pod in pods:
        (token,) = [e for e in pod["spec"]["containers"][0]["env"] if e["name"] == "STARFORGE_TOKEN"]
        assert token == {"name": "STARFORGE_TOKEN", "valueFrom": {"secretKeyRef": refs[0]}}


@pytest.mark.parametrize("case", sorted(CASES))
def test_names_are_dns_1123(case: str) -> None:
    spec, job = CASES[case]
    doc = yaml.safe_load(render_rayjob(spec, job, CONFIG))
    names = [doc["metadata"]["name"], run_secret_name(job.job_id)]
    names += [w["groupName"] for w in _workers(doc)]
    assert all(DNS_1123.fullmatch(n) and len(n) <= 63 for n in names), names
    assert doc["metadata"]["name"] == f"sf-{job.job_id}"


def test_unsafe_job_ids_and_pool_names_are_made_dns_safe() -> None:
    assert manifest_name("R_Weird.ID/" + "x" * 80) == "sf-r-weird-id-" + "x" * 33
    spec = _spec("tinyrl/grpo", "tinyrl", [{"name": "Big_Pool", "nodes": 1, "gpus_per_node": 1, "series": "cpu"}])
    doc = yaml.safe_load(render_rayjob(spec, CASES["tinyrl_cpu1"][1], CONFIG))
    assert _workers(doc)[0]["groupName"] == "big-pool"


def test_spec_image_wins_over_the_configured_one_and_the_default_fills_in() -> None:
    spec, job = CASES["tinyrl_cpu1"]
    images = {"spec": "nvcr.io/lab/own:1", "config": "", "default": ""}
    own = parse({**spec.to_dict(), "spec": {**spec.spec.to_dict(),
                                            "framework": {**spec.spec.framework.to_dict(), "image": images["spec"]}}})
    assert own.spec is not None, own.problems

    def pods(doc: dict[str, Any]) -> set[str]:
        cluster = doc["spec"]["rayClusterSpec"]
        templates = [cluster["headGroupSpec"]["template"], doc["spec"]["submitterPodTemplate"]]
        templates += [w["template"] for w in cluster["workerGroupSpecs"]]
        return {c["image"] for t in templates for c in t["spec"]["containers"] + t["spec"].get("initContainers", [])}

    assert pods(yaml.safe_load(render_rayjob(own.spec, job, CONFIG))) == {images["spec"]}
    assert pods(yaml.safe_load(render_rayjob(spec, job, CONFIG))) == {CONFIG.image}
    assert pods(yaml.safe_load(render_rayjob(spec, job, KubeRayConfig()))) == {DEFAULT_IMAGE}


def test_a_binding_the_deployment_lacks_is_refused_at_its_field() -> None:
    spec = _spec("nemo-rl/grpo", "nemo-rl", [{"name": "all", "nodes": 1, "gpus_per_node": 8, "series": "h200"}])
    with pytest.raises(RenderRefused) as refused:
        render_rayjob(spec, CASES["h200_16"][1], CONFIG)
    assert refused.value.field == "binding.nemo_rl_dir" and refused.value.hint


@pytest.mark.parametrize("raw, message", [
    ({"nodes": 1}, "unknown keys nodes"),
    ({"namespace": "Not_DNS"}, "DNS-1123"),
    ({"node_selectors": {"h200": ["x"]}}, "node_selectors.h200"),
    ({"ttl_seconds_after_finished": True}, "ttl_seconds_after_finished"),
    ({"storage_root": "relative"}, "absolute"),
    ("on", "must be a mapping"),
])
def test_config_refuses_bad_keys(raw: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        kuberay_config_from(raw)


def test_console_settings_read_the_kuberay_block(tmp_path: Path) -> None:
    config = tmp_path / "console.yaml"
    config.write_text("kuberay:\n  namespace: ml\n  image: img:1\n", encoding="utf-8")
    settings = load_settings(config, state_dir=tmp_path / "state")
    assert settings.kuberay.namespace == "ml" and settings.kuberay.image == "img:1"
    config.write_text("kuberay:\n  bogus: 1\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="kuberay: unknown keys bogus"):
        load_settings(config, state_dir=tmp_path / "state")
