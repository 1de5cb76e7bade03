"""Render one admitted job as a KubeRay `RayJob` manifest (YAML text): pure, from the JobSpec, the job's facts and
the console's `kuberay:` settings; the run token is only ever named (a Secret reference), never written.

The shape: the head group carries no accelerators; each resource pool becomes one worker group (`replicas` =
`nodes`, the series' GPU resource limit = `gpus_per_node`, the series' node selector); the submitter pod first
fetches the job's prepared work folder from the console (`workdir_url`) with the run token, into the folder
`runtimeEnvYAML.working_dir` names, and KubeRay's own `ray job submit` uploads it and runs `forge-launch` there.
The job environment is `starforge.contract.spec_to_env` without secrets; the token reaches pods as
`STARFORGE_TOKEN` from the Secret `sf-<job>-run` (key `token`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..contract import INGEST_TOKEN_VARIABLE, Binding, BindingError, JobSpec, spec_to_env
from ..wire import INGEST_ROOT
from .config_reader import known_block

__all__ = [
    "DEFAULT_IMAGE",
    "KubeRayConfig",
    "RenderJob",
    "RenderRefused",
    "TOKEN_KEY",
    "kuberay_config_from",
    "manifest_name",
    "render_rayjob",
    "run_secret_name",
    "workdir_url",
]

TOKEN_KEY = "token"  # the key of the run token inside the run Secret
TOKEN_ENV = INGEST_TOKEN_VARIABLE
DEFAULT_IMAGE = "starforge/ray-job:latest"  # an image with Ray and StarForge; deployments publish their own
WORK_MOUNT = "/starforge/work"  # where the submitter unpacks the work folder (runtime_env.working_dir)
_LABEL_PREFIX = "starforge.dev"
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_NAME_MAX = 47  # KubeRay derives cluster and submitter names from the RayJob's; it keeps RayJob names this short
_KEYS = ("namespace", "image", "service_account", "gpu_resource", "cpu_series", "node_selectors",
         "ttl_seconds_after_finished", "storage_root", "storage_claim")


class RenderRefused(ValueError):
    """The job cannot be rendered as this deployment is configured: `field`, `message` and a `hint`."""

    def __init__(self, field: str, message: str, hint: str) -> None:
        self.field, self.message, self.hint = field, message, hint
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class KubeRayConfig:
    """The `kuberay:` block of the console configuration (every key optional)."""

    namespace: str = "default"
    image: str = DEFAULT_IMAGE  # the pods' image when the job names none (`spec.framework.image`)
    service_account: str = ""
    gpu_resource: str = "nvidia.com/gpu"
    cpu_series: tuple[str, ...] = ("cpu",)  # series whose slots are CPUs, not accelerators
    node_selectors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # series → node labels
    ttl_seconds_after_finished: int = 3600
    storage_root: str = "/starforge/storage"  # the job's storage root inside the pods
    storage_claim: str = ""  # a PersistentVolumeClaim mounted there; empty: a per-pod emptyDir


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise ValueError(f"kuberay.{key}: must be a non-empty string")
    return value.strip()


def _dns_label(value: Any, key: str) -> str:
    text = _text(value, key)
    if len(text) > 63 or not _DNS_LABEL.fullmatch(text):
        raise ValueError(f"kuberay.{key}: {text!r} is not a DNS-1123 label (lowercase letters, digits and '-')")
    return text


def _selectors(value: Any) -> dict[str, dict[str, str]]:
    if not isinstance(value, dict):
        raise ValueError("kuberay.node_selectors: must map each series to {node label: value}")
    out: dict[str, dict[str, str]] = {}
    for series, labels in value.items():
        if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in labels.items()):
            raise ValueError(f"kuberay.node_selectors.{series}: must map node label names to string values")
        out[str(series)] = dict(labels)
    return out


def kuberay_config_from(raw: Any) -> KubeRayConfig:
    """Return the `kuberay:` settings block, or raise ValueError naming the key (unknown keys are refused)."""
    if raw is None:
        return KubeRayConfig()
    raw = known_block(raw, "kuberay", _KEYS)
    values: dict[str, Any] = {}
    for key in ("namespace", "service_account"):
        if key in raw:
            values[key] = _dns_label(raw[key], key)
    for key in ("image", "gpu_resource", "storage_claim"):
        if key in raw:
            values[key] = _text(raw[key], key)
    if "storage_root" in raw:
        root = _text(raw["storage_root"], "storage_root")
        if not root.startswith("/"):
            raise ValueError("kuberay.storage_root: must be an absolute path inside the pods")
        values["storage_root"] = root.rstrip("/") or "/"
    if "cpu_series" in raw:
        series = raw["cpu_series"]
        if not isinstance(series, list) or not all(isinstance(s, str) for s in series):
            raise ValueError("kuberay.cpu_series: must be a list of series names")
        values["cpu_series"] = tuple(series)
    if "node_selectors" in raw:
        values["node_selectors"] = _selectors(raw["node_selectors"])
    if "ttl_seconds_after_finished" in raw:
        ttl = raw["ttl_seconds_after_finished"]
        if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
            raise ValueError("kuberay.ttl_seconds_after_finished: must be a whole number of seconds ≥ 0")
        values["ttl_seconds_after_finished"] = ttl
    return KubeRayConfig(**values)


@dataclass(frozen=True)
class RenderJob:
    """What the console knows of the job besides its spec: id, owner, profile, its own URL and the wall limit."""

    job_id: str
    owner: str
    profile: str
    base_url: str
    wall_seconds: float | None = None
    nemo_rl_dir: str = ""


def _dns_name(text: str, limit: int = 63) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:limit].strip("-")
    return name or "x"


def manifest_name(job_id: str) -> str:
    """Return the RayJob's name, `sf-<job id>` made DNS-1123 (lowercase, at most 47 characters)."""
    return _dns_name(f"sf-{job_id}", _NAME_MAX)


def run_secret_name(job_id: str) -> str:
    """Return the name of the Secret holding the run token (`<manifest name>-run`)."""
    return f"{manifest_name(job_id)}-run"


def workdir_url(base_url: str, job_id: str) -> str:
    """Return where the submitter fetches the job's prepared work folder (a gzip tar), with the run token."""
    return f"{base_url.rstrip('/')}/api/runs/{job_id}/workdir"


def _label_value(text: str) -> str:
    value = re.sub(r"[^A-Za-z0-9_.-]+", ".", text)[:63]
    value = value.strip("-_.")
    return value if _LABEL_VALUE.fullmatch(value) else ""


def _job_env(spec: JobSpec, job: RenderJob, config: KubeRayConfig) -> dict[str, str]:
    """Return the job environment without its secrets: spec_to_env with a placeholder token, which is removed."""
    pools = spec.spec.resources.pools
    binding = Binding(
        run_id=job.job_id, profile=job.profile, nemo_rl_dir=job.nemo_rl_dir,
        num_nodes=sum(p.nodes for p in pools) if pools else None,
        gpus_per_node=max(p.gpus_per_node for p in pools) if pools else None,
        storage_root=config.storage_root,
        ingest_endpoint=f"{job.base_url.rstrip('/')}{INGEST_ROOT}", ingest_token="<from the run Secret>",
    )
    try:
        env = spec_to_env(spec, binding)
    except BindingError as exc:
        raise RenderRefused(exc.field, str(exc), "set framework_dirs in the console configuration") from exc
    env.pop(TOKEN_ENV, None)  # the token reaches the pods from the Secret, never in the manifest
    return env


def _token_env(job_id: str) -> dict[str, Any]:
    return {"name": TOKEN_ENV,
            "valueFrom": {"secretKeyRef": {"name": run_secret_name(job_id), "key": TOKEN_KEY}}}


def _storage_volume(config: KubeRayConfig) -> dict[str, Any]:
    if config.storage_claim:
        return {"name": "storage", "persistentVolumeClaim": {"claimName": config.storage_claim}}
    return {"name": "storage", "emptyDir": {}}


def _pod(config: KubeRayConfig, container: dict[str, Any], *, selector: Mapping[str, str] | None = None,
         volumes: list[dict[str, Any]] | None = None, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {}
    if config.service_account:
        pod["serviceAccountName"] = config.service_account
    if selector:
        pod["nodeSelector"] = dict(selector)
    pod.update(extra or {})
    pod["containers"] = [container]
    pod["volumes"] = volumes if volumes is not None else [_storage_volume(config)]
    return {"spec": pod}


def _ray_container(name: str, image: str, job_id: str, config: KubeRayConfig,
                   resources: Mapping[str, Any] | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image, "env": [_token_env(job_id)],
                                 "volumeMounts": [{"name": "storage", "mountPath": config.storage_root}]}
    if resources:
        container["resources"] = {"limits": dict(resources), "requests": dict(resources)}
    return container


# The submitter's first step: download the work folder with the run token and unpack it (tar members checked by
# Python's `data` filter). It runs in the job's image, which has Python; nothing of it is secret.
_FETCH = (
    "import os, sys, tarfile, urllib.request; "
    "req = urllib.request.Request(sys.argv[1], headers={'X-StarForge-Token': os.environ['STARFORGE_TOKEN']}); "
    "tarfile.open(fileobj=urllib.request.urlopen(req), mode='r|gz').extractall(sys.argv[2], filter='data')"
)


def _submitter(spec_image: str, job: RenderJob, config: KubeRayConfig) -> dict[str, Any]:
    fetch = {"name": "fetch-work", "image": spec_image, "env": [_token_env(job.job_id)],
             "command": ["python3", "-c", _FETCH, workdir_url(job.base_url, job.job_id), WORK_MOUNT],
             "volumeMounts": [{"name": "work", "mountPath": WORK_MOUNT}]}
    submit = {"name": "ray-job-submitter", "image": spec_image,  # no command: KubeRay runs `ray job submit`
              "volumeMounts": [{"name": "work", "mountPath": WORK_MOUNT}]}
    return _pod(config, submit, volumes=[{"name": "work", "emptyDir": {}}],
                extra={"restartPolicy": "Never", "initContainers": [fetch]})


class _Dumper(yaml.SafeDumper):
    """Safe YAML that writes multi-line text (the runtime environment) as a literal block."""


def _text_block(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text_block)


def render_rayjob(spec: JobSpec, job: RenderJob, config: KubeRayConfig) -> str:
    """Return the RayJob manifest of an admitted job as YAML text, or raise RenderRefused (a binding the deployment
    lacks, e.g. a NeMo-RL job without the NeMo-RL checkout)."""
    s = spec.spec
    image = s.framework.image or config.image
    name = manifest_name(job.job_id)
    labels = {f"{_LABEL_PREFIX}/job": _label_value(job.job_id), f"{_LABEL_PREFIX}/owner": _label_value(job.owner),
              f"{_LABEL_PREFIX}/recipe": _label_value(s.recipe.name)}
    env = _job_env(spec, job, config)
    runtime_env = {"working_dir": WORK_MOUNT, "env_vars": env}
    head = {"rayStartParams": {"dashboard-host": "0.0.0.0", "num-gpus": "0"},
            "template": _pod(config, _ray_container("ray-head", image, job.job_id, config, None))}
    workers = []
    for pool in s.resources.pools:
        series = pool.series or pool.name
        resource = "cpu" if series in config.cpu_series else config.gpu_resource
        container = _ray_container("ray-worker", image, job.job_id, config, {resource: pool.gpus_per_node})
        workers.append({
            "groupName": _dns_name(pool.name),
            "replicas": pool.nodes, "minReplicas": pool.nodes, "maxReplicas": pool.nodes,
            "rayStartParams": {},
            "template": _pod(config, container, selector=config.node_selectors.get(series)),
        })
    body: dict[str, Any] = {
        "entrypoint": "forge-launch",
        "runtimeEnvYAML": yaml.safe_dump(runtime_env, sort_keys=False),
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": config.ttl_seconds_after_finished,
    }
    if job.wall_seconds:
        body["activeDeadlineSeconds"] = int(job.wall_seconds)
    body["submitterPodTemplate"] = _submitter(image, job, config)
    body["rayClusterSpec"] = {"headGroupSpec": head, "workerGroupSpecs": workers}
    manifest = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": config.namespace,
                     "labels": {k: v for k, v in labels.items() if v},
                     "annotations": {f"{_LABEL_PREFIX}/recipe": s.recipe.name,
                                     f"{_LABEL_PREFIX}/run-secret": run_secret_name(job.job_id)}},
        "spec": body,
    }
    return yaml.dump(manifest, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
