"""`executors.slurm` of the console configuration: read through `load_settings`, refused with the key named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from starforge.console.settings import SettingsError, load_settings
from starforge.engines.slurm import SlurmSeries, SlurmSettings

H200 = {"series": {"h200": {"partition": "gpu"}}}


def settings_with(tmp_path: Path, slurm: Any) -> SlurmSettings:
    config = tmp_path / "console.yaml"
    config.write_text(yaml.safe_dump({"executors": {"slurm": slurm}}), encoding="utf-8")
    return load_settings(config, state_dir=tmp_path / "state").slurm


def test_defaults_without_a_slurm_section(tmp_path: Path) -> None:
    slurm = load_settings(state_dir=tmp_path / "state").slurm
    assert slurm == SlurmSettings()
    assert settings_with(tmp_path, H200).series_for("h200") == SlurmSeries(partition="gpu")
    assert slurm.series_for("cpu").gres == "" and slurm.series_for("h200").gres == "gpu"
    assert slurm.uses_ray("verl") and slurm.uses_ray("nemo-rl") and slurm.uses_ray("openrlhf")
    assert not slurm.uses_ray("trl")


def test_a_full_section_is_read(tmp_path: Path) -> None:
    slurm = settings_with(tmp_path, {
        "series": {"h200": {"partition": "gpu", "constraint": "h200", "account": "lab", "qos": "high",
                            "gres": "gpu:h200", "gpus_per_node": 8},
                   "cpu": {"partition": "cpu"}},
        "time_limit_hours": 12,
        "sbatch_options": ["--exclusive", "--mail-type=FAIL", "--exclude=node[01-03]"],
        "ray_frameworks": ["verl"],
        "runtime_root": "/shared/runtimes",
        "container": "pyxis",
        "sandbox": "off",  # a container is then the jobs' only isolation
        "ray_port": 6380,
        "master_port": 29501,
        "ray_wait_seconds": 120,
    })
    assert slurm.series["h200"] == SlurmSeries("gpu", "h200", "lab", "high", "gpu:h200", 8)
    assert slurm.series["cpu"] == SlurmSeries(partition="cpu", gres="")  # still a CPU series
    assert slurm.time_limit_hours == 12.0 and slurm.container == "pyxis" and slurm.ray_frameworks == ("verl",)
    assert slurm.sandbox is False and settings_with(tmp_path, {"series": {"cpu": {}}}).sandbox is True
    assert slurm.sbatch_options == ("--exclusive", "--mail-type=FAIL", "--exclude=node[01-03]")
    assert (slurm.runtime_root, slurm.ray_port, slurm.master_port, slurm.ray_wait_seconds) == (
        "/shared/runtimes", 6380, 29501, 120)


@pytest.mark.parametrize(("section", "message"), [
    ("gpu", "executors.slurm: must be a mapping"),
    ({"partitions": {}}, "executors.slurm: unknown keys partitions"),
    ({}, "executors.slurm.series: required"),
    ({"container": "pyxis"}, "executors.slurm.series: required"),
    ({"series": {}}, "executors.slurm.series: required"),
    ({"series": ["h200"]}, "executors.slurm.series: must map series names"),
    ({"series": {"h200": "gpu"}}, "executors.slurm.series.h200: must be a mapping"),
    ({"series": {"h200": {"nodes": 2}}}, "executors.slurm.series.h200: unknown keys nodes"),
    ({"series": {"h200": {"partition": "gpu h200"}}}, "executors.slurm.series.h200.partition: must be"),
    ({"series": {"h200": {"account": ""}}}, "executors.slurm.series.h200.account: must be"),
    ({"series": {"h200": {"qos": "a'b"}}}, "executors.slurm.series.h200.qos: must be"),
    ({"series": {"h200": {"gpus_per_node": -1}}}, "executors.slurm.series.h200.gpus_per_node: must be"),
    ({"series": {"h200": {"gpus_per_node": True}}}, "executors.slurm.series.h200.gpus_per_node: must be"),
    ({**H200, "time_limit_hours": "1d"}, "executors.slurm.time_limit_hours: must be"),
    ({**H200, "sbatch_options": "--exclusive"}, "executors.slurm.sbatch_options: must be a list"),
    ({**H200, "sbatch_options": ["exclusive"]}, r"executors.slurm.sbatch_options\[0\]: 'exclusive' is not"),
    ({**H200, "sbatch_options": ["--comment=a b"]}, r"executors.slurm.sbatch_options\[0\]"),
    ({**H200, "sbatch_options": ["--x=$(id)"]}, r"executors.slurm.sbatch_options\[0\]"),
    ({**H200, "sbatch_options": ["--output=/tmp/x"]}, r"sbatch_options\[0\]: --output is set by StarForge"),
    ({**H200, "sbatch_options": ["--ok", "--gres=gpu:1"]}, r"sbatch_options\[1\]: --gres is set by StarForge"),
    ({**H200, "ray_frameworks": "verl"}, "executors.slurm.ray_frameworks: must be a list"),
    ({**H200, "runtime_root": "relative/path"}, "executors.slurm.runtime_root: must be an absolute folder"),
    ({**H200, "container": "docker"}, "executors.slurm.container: must be one of none, pyxis, apptainer"),
    ({**H200, "ray_port": 0}, "executors.slurm.ray_port: must be a whole number from 1 to 65535"),
    ({**H200, "master_port": "29500"}, "executors.slurm.master_port: must be"),
    ({**H200, "ray_wait_seconds": 0}, "executors.slurm.ray_wait_seconds: must be"),
    ({**H200, "sandbox": "maybe"}, "executors.slurm.sandbox: must be on or off"),
    ({**H200, "container": "apptainer"}, "apptainer cannot run inside the job sandbox: set executors.slurm.sandbox: off"),
])
def test_bad_sections_are_refused_naming_the_key(tmp_path: Path, section: Any, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        settings_with(tmp_path, section)


def test_unknown_engines_stay_refused(tmp_path: Path) -> None:
    config = tmp_path / "console.yaml"
    config.write_text(yaml.safe_dump({"executors": {"slurmm": {}}}), encoding="utf-8")
    with pytest.raises(SettingsError, match=r"executors: unknown engines slurmm \(known: local, slurm"):
        load_settings(config, state_dir=tmp_path / "state")
