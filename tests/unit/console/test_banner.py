"""The start banner tells the truth per engine: Slurm's jobs run in the node sandbox, Ray's in none; and the `cpu`
profile says where its slots are."""

from __future__ import annotations

from pathlib import Path

from starforge.console.banner import sandbox_banner
from starforge.console.settings import load_settings
from starforge.engines import Isolation


def _settings(tmp_path: Path, text: str, **overrides: object):  # type: ignore[no-untyped-def]
    config = tmp_path / "console.yaml"
    config.write_text(text)
    return load_settings(config_file=config, state_dir=tmp_path / "state", **overrides)


def test_a_slurm_console_says_its_jobs_are_sandboxed_on_their_nodes(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "executors: {slurm: {series: {cpu: {partition: debug}}, network: none}}\n",
                         executor="slurm")
    banner = sandbox_banner(settings, Isolation.none(settings.state_dir))
    assert "OFF" not in banner and "slurm jobs: bubblewrap on their nodes" in banner, banner
    assert "network: none" in banner
    assert {p.name: p.label for p in settings.profiles}["cpu"] == "CPU slot on the slurm cluster"


def test_a_ray_console_says_its_jobs_are_not_sandboxed(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "{}\n", executor="ray")
    assert sandbox_banner(settings, Isolation.none(settings.state_dir)) == (
        "ray jobs: NOT sandboxed (they run as the Ray cluster's own user)")
    off = _settings(tmp_path, "executors: {slurm: {series: {cpu: {partition: debug}}, sandbox: off}}\n",
                    executor="slurm")
    assert "slurm jobs: NOT sandboxed" in sandbox_banner(off, Isolation.none(off.state_dir))


def test_a_local_console_keeps_its_label_and_says_its_sandbox(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "{}\n")
    assert {p.name: p.label for p in settings.profiles}["cpu"] == "CPU slot on the console machine"
    assert sandbox_banner(settings, Isolation.none(settings.state_dir)) == "local jobs: OFF"
