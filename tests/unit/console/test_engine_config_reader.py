"""Every engine's configuration block opens with the same two refusals, word for word, at the block's own path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from starforge.engines.config_reader import known_block
from starforge.engines.kuberay_manifest import kuberay_config_from
from starforge.engines.ray.config import ray_settings_from
from starforge.engines.runtimes.config import RuntimeSettings, runtime_settings_from
from starforge.engines.slurm.config import slurm_settings_from

_RUNTIME_DEFAULTS = RuntimeSettings(cache_dir=Path("/tmp/c"), hub_cache=Path("/tmp/h"))

READERS: list[tuple[str, Callable[[Any], Any], str]] = [
    ("executors.ray", ray_settings_from,
     "address, series_resources, cpu_series, ray_frameworks, shared_runtime, capacity, sandbox, network, "
     "slots_per_node"),
    ("executors.slurm", slurm_settings_from,
     "series, time_limit_hours, sbatch_options, ray_frameworks, runtime_root, container, ray_port, master_port, "
     "ray_wait_seconds, sandbox, network, capacity"),
    ("kuberay", kuberay_config_from,
     "namespace, image, service_account, gpu_resource, cpu_series, node_selectors, ttl_seconds_after_finished, "
     "storage_root, storage_claim"),
    ("runtimes", lambda raw: runtime_settings_from(raw, _RUNTIME_DEFAULTS),
     "cache_dir, hub_cache, installer, cpu_torch, cpu_index_url, cpu_series, gpu_only, requires, build_workers, "
     "build_timeout, console_env"),
]


@pytest.mark.parametrize(("path", "read", "known"), READERS, ids=[r[0] for r in READERS])
def test_a_block_that_is_not_a_mapping_is_refused_with_the_keys_it_may_hold(
        path: str, read: Callable[[Any], Any], known: str) -> None:
    with pytest.raises(ValueError) as refused:
        read(["not", "a", "mapping"])
    assert str(refused.value) == f"{path}: must be a mapping of {known}"


@pytest.mark.parametrize(("path", "read", "known"), READERS, ids=[r[0] for r in READERS])
def test_unknown_keys_are_refused_sorted_with_the_known_ones(path: str, read: Callable[[Any], Any], known: str) -> None:
    with pytest.raises(ValueError) as refused:
        read({"zeta": 1, "alpha": 2})
    assert str(refused.value) == f"{path}: unknown keys alpha, zeta (known: {known})"


def test_a_slurm_series_entry_is_read_with_the_same_opening_checks_at_its_path() -> None:
    with pytest.raises(ValueError) as refused:
        slurm_settings_from({"series": {"h200": {"nodes": 2}}})
    assert str(refused.value) == ("executors.slurm.series.h200: unknown keys nodes "
                                  "(known: partition, constraint, account, qos, gres, gpus_per_node)")


def test_known_block_returns_the_mapping_it_accepted() -> None:
    block = {"a": 1}
    assert known_block(block, "x", ("a", "b")) is block
    assert known_block({}, "x", ("a",)) == {}
