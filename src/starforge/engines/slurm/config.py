"""`executors.slurm` of the console configuration: how each series maps onto Slurm, validated into `SlurmSettings`.

Parsing raises ValueError naming the offending key (the settings module turns it into a SettingsError).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..config_reader import known_block, slot_counts
from ..jobnet import EGRESS, network_mode

__all__ = ["CONTAINER_MODES", "RAY_FRAMEWORKS", "RESERVED_OPTIONS", "SlurmSeries", "SlurmSettings",
           "slurm_settings_from"]

CONTAINER_MODES = ("none", "pyxis", "apptainer")
RAY_FRAMEWORKS = ("nemo-rl", "verl", "openrlhf")  # recipes of these frameworks get the Ray-on-Slurm bootstrap
# options the batch script sets itself: an extra option may not override them
RESERVED_OPTIONS = frozenset({"job-name", "output", "error", "open-mode", "time", "nodes", "ntasks", "ntasks-per-node",
                              "gres", "cpus-per-task", "partition", "constraint", "account", "qos", "parsable",
                              "wrap", "chdir", "hetjob", "export"})
_WORD = re.compile(r"[A-Za-z0-9_.,:@+/\[\]-]+")  # a value safe on an `#SBATCH` line without quoting
_OPTION = re.compile(r"--([a-z][a-z0-9-]*)(?:=([A-Za-z0-9_.,:@+/\[\]=-]+))?")
_SERIES_KEYS = ("partition", "constraint", "account", "qos", "gres", "gpus_per_node")
_KNOWN = ("series", "time_limit_hours", "sbatch_options", "ray_frameworks", "runtime_root", "container", "ray_port",
          "master_port", "ray_wait_seconds", "sandbox", "network", "capacity")


@dataclass(frozen=True)
class SlurmSeries:
    """Where one series runs on the cluster: partition, constraint, account and QOS, and the GRES that counts it.

    `gres` is the GRES name requested per node (`gpu`, or a typed one such as `gpu:h200`); empty for a CPU series,
    whose slots become `--cpus-per-task`. `gpus_per_node` is the node size (0: not checked).
    """

    partition: str = ""
    constraint: str = ""
    account: str = ""
    qos: str = ""
    gres: str = "gpu"
    gpus_per_node: int = 0


def _default_series() -> dict[str, SlurmSeries]:
    return {"cpu": SlurmSeries(gres="")}


@dataclass(frozen=True)
class SlurmSettings:
    """How the Slurm executor shapes batch scripts (see docs/engines.md, `## Slurm`, for each key)."""

    series: Mapping[str, SlurmSeries] = field(default_factory=_default_series)
    time_limit_hours: float = 0.0  # when the job has no wall-time limit of its own; 0: the partition's default
    sbatch_options: tuple[str, ...] = ()  # extra `--key=value` (or `--flag`) lines for every job
    ray_frameworks: tuple[str, ...] = RAY_FRAMEWORKS
    runtime_root: str = ""  # where runtimes are built: a folder every node sees at the same path
    container: str = "none"  # none | pyxis | apptainer
    ray_port: int = 6379
    master_port: int = 29500
    ray_wait_seconds: int = 300  # how long the Ray bootstrap waits for every node to join
    sandbox: bool = True  # start each job in the bubblewrap job sandbox on its nodes (not Ray worlds, not containers)
    network: str = EGRESS  # none | egress: what a sandboxed job's own network namespace reaches on its node (`jobnet`)
    capacity: Mapping[str, int] = field(default_factory=dict)  # slots per series, instead of what sinfo counts

    def series_for(self, name: str) -> SlurmSeries:
        """Return the configuration of series `name` (unconfigured: its slots are GPUs counted as GRES `gpu`)."""
        return self.series.get(name) or SlurmSeries()

    def uses_ray(self, framework: str) -> bool:
        """Return True when recipes of `framework` are launched through Ray."""
        return framework in self.ray_frameworks


def _word(value: Any, key: str) -> str:
    if not isinstance(value, str) or not _WORD.fullmatch(value):
        raise ValueError(f"executors.slurm.{key}: must be a non-empty word of letters, digits and _.,:@+/[]- "
                         f"(got {value!r})")
    return value


def _count(value: Any, key: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"executors.slurm.{key}: must be a whole number from {low} to {high}")
    return value


def _series(raw: Any) -> dict[str, SlurmSeries]:
    if not isinstance(raw, dict):
        raise ValueError("executors.slurm.series: must map series names to {partition, constraint, account, qos, "
                         "gres, gpus_per_node}, e.g. {h200: {partition: gpu, gres: gpu, gpus_per_node: 8}}")
    out = _default_series()
    for name, item in raw.items():
        key = f"series.{name}"
        item = known_block(item, f"executors.slurm.{key}", _SERIES_KEYS)
        values: dict[str, Any] = {k: _word(item[k], f"{key}.{k}")
                                  for k in ("partition", "constraint", "account", "qos") if k in item}
        if "gres" in item:
            gres = item["gres"]
            values["gres"] = "" if gres in (None, False, "none") else _word(gres, f"{key}.gres")
        if "gpus_per_node" in item:
            values["gpus_per_node"] = _count(item["gpus_per_node"], f"{key}.gpus_per_node", 0, 1024)
        out[str(name)] = replace(out.get(str(name), SlurmSeries()), **values)
    return out


def _options(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise ValueError("executors.slurm.sbatch_options: must be a list of `--key=value` strings, "
                         "e.g. [\"--exclusive\", \"--mail-type=FAIL\"]")
    for i, option in enumerate(raw):
        match = _OPTION.fullmatch(option) if isinstance(option, str) else None
        if match is None:
            raise ValueError(f"executors.slurm.sbatch_options[{i}]: {option!r} is not a `--key=value` or `--flag` "
                             "option (letters, digits and _.,:@+/[]=- only)")
        if match.group(1) in RESERVED_OPTIONS:
            raise ValueError(f"executors.slurm.sbatch_options[{i}]: --{match.group(1)} is set by StarForge itself "
                             "(configure it per series, or through the job's limits)")
    return tuple(raw)


def slurm_settings_from(raw: Any) -> SlurmSettings:
    """Return the Slurm settings read from the `executors.slurm` mapping; raise ValueError naming a bad key."""
    raw = known_block(raw, "executors.slurm", _KNOWN)
    if not raw.get("series"):  # without it every series would land in the default partition, indistinguishable
        raise ValueError("executors.slurm.series: required: map each series of the profiles to its partition, "
                         "e.g. {h200: {partition: gpu-h200, gpus_per_node: 8}, cpu: {partition: cpu}}")
    values: dict[str, Any] = {"series": _series(raw["series"])}
    if "time_limit_hours" in raw:
        hours = raw["time_limit_hours"]
        if isinstance(hours, bool) or not isinstance(hours, int | float) or not 0 <= hours < 1e5:
            raise ValueError("executors.slurm.time_limit_hours: must be a number of hours ≥ 0 (0 = the partition's "
                             "default)")
        values["time_limit_hours"] = float(hours)
    if "sbatch_options" in raw:
        values["sbatch_options"] = _options(raw["sbatch_options"])
    if "ray_frameworks" in raw:
        frameworks = raw["ray_frameworks"]
        if not isinstance(frameworks, list) or not all(isinstance(f, str) and f.strip() for f in frameworks):
            raise ValueError("executors.slurm.ray_frameworks: must be a list of framework names, e.g. [verl]")
        values["ray_frameworks"] = tuple(f.strip() for f in frameworks)
    if "runtime_root" in raw:
        root = raw["runtime_root"]
        if not isinstance(root, str) or not root.startswith("/") or not _WORD.fullmatch(root):
            raise ValueError("executors.slurm.runtime_root: must be an absolute folder path every node sees "
                             "(letters, digits and _.,:@+/- only), e.g. /shared/starforge/runtimes")
        values["runtime_root"] = root
    if "container" in raw:
        if raw["container"] not in CONTAINER_MODES:
            raise ValueError(f"executors.slurm.container: must be one of {', '.join(CONTAINER_MODES)}")
        values["container"] = raw["container"]
    for key in ("ray_port", "master_port"):
        if key in raw:
            values[key] = _count(raw[key], key, 1, 65535)
    if "ray_wait_seconds" in raw:
        values["ray_wait_seconds"] = _count(raw["ray_wait_seconds"], "ray_wait_seconds", 1, 86400)
    if "sandbox" in raw:
        sandbox = raw["sandbox"]  # YAML 1.1 reads a bare `off` as False
        if sandbox not in (True, False, "on", "off"):
            raise ValueError("executors.slurm.sandbox: must be on or off")
        values["sandbox"] = sandbox in (True, "on")
    if "network" in raw:
        values["network"] = network_mode(raw["network"], "executors.slurm.network")
    if values.get("sandbox", True) and values.get("container", "none") != "none":
        raise ValueError(f"executors.slurm.container: {values['container']} cannot run inside the job sandbox: set "
                         "executors.slurm.sandbox: off to make the container the jobs' only isolation")
    if "capacity" in raw:
        values["capacity"] = slot_counts(raw["capacity"], "executors.slurm.capacity")
    return SlurmSettings(**values)
