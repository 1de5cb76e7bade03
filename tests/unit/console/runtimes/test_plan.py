"""Which runtime a recipe needs on a series, and whether the console can run it there (`blocker`, `Runtimes.plan`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from starforge.engines.runtimes import (
    CPU,
    GPU,
    ConsoleEnvironment,
    PipConfig,
    Runtimes,
    RuntimeSettings,
    blocker,
    console_environment,
    job_kind,
    series_kind,
)
from starforge.recipes import load_catalog
from tests.unit.console.runtimes._bare_recipe import bare_module_recipe


@pytest.fixture(scope="module")
def catalog() -> Any:
    return load_catalog(None, overlays=False)


def _settings(tmp_path: Path, **values: Any) -> RuntimeSettings:
    return RuntimeSettings(cache_dir=tmp_path / "rt", hub_cache=tmp_path / "hub", **values)


def _blocker(catalog: Any, name: str, series: str, settings: RuntimeSettings, dirs: dict[str, str] | None = None,
             env: ConsoleEnvironment | None = None) -> Any:
    recipe = catalog.get(name)
    return blocker(recipe, recipe.runtime.default_version, series, settings=settings, framework_dirs=dirs or {},
                   env=env or console_environment())


def test_series_kinds(tmp_path: Path) -> None:
    settings = _settings(tmp_path, cpu_series=("cpu", "epyc"))
    assert series_kind("epyc", settings) == CPU and series_kind("h200", settings) == GPU
    assert job_kind(["cpu", "epyc"], settings) == CPU
    assert job_kind(["cpu", "h200"], settings) == GPU


def test_a_gpu_only_framework_is_refused_on_a_cpu_series(catalog: Any, tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    found = _blocker(catalog, "nemo-rl/grpo", "cpu", settings, {"nemo-rl": str(tmp_path)})
    assert found is not None and "GPUs only" in found.reason and "'cpu'" in found.reason
    assert "series has GPUs" in found.hint
    # the same recipe on a GPU series, with its checkout configured, is runnable
    assert _blocker(catalog, "nemo-rl/grpo", "h200", settings, {"nemo-rl": str(tmp_path)}) is None
    # and an operator may declare that series without GPUs too
    assert _blocker(catalog, "nemo-rl/grpo", "h200", _settings(tmp_path, cpu_series=("h200",)),
                    {"nemo-rl": str(tmp_path)}) is not None


def test_a_file_entrypoint_needs_its_framework_checkout(catalog: Any, tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    missing = _blocker(catalog, "nemo-rl/sft", "h200", settings)
    assert missing is not None and "checkout" in missing.reason and "framework_dirs" in missing.hint
    gone = _blocker(catalog, "nemo-rl/sft", "h200", settings, {"nemo-rl": str(tmp_path / "absent")})
    assert gone is not None and "is not a folder" in gone.reason


def test_a_module_without_requirements_must_be_importable(tmp_path: Path) -> None:
    bare = {"evalkit/benchmark": bare_module_recipe(tmp_path)}
    settings = _settings(tmp_path)
    found = _blocker(bare, "evalkit/benchmark", "cpu", settings)
    assert found is not None and "evalkit" in found.reason and "runtimes.requires.evalkit-1.0.0" in found.hint
    # the deployment's requirements make it buildable
    assert _blocker(bare, "evalkit/benchmark", "cpu",
                    _settings(tmp_path, requires={"evalkit-1.0.0": ("evalkit==1.0",)})) is None


def test_custom_and_buildable_recipes_run_anywhere(catalog: Any, tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    for name in ("custom/custom", "trl/sft", "tinyrl/grpo"):
        assert _blocker(catalog, name, "cpu", settings) is None, name


def _runtimes(tmp_path: Path, **values: Any) -> Runtimes:
    return Runtimes(_settings(tmp_path, **values), pip_config=PipConfig(find_links=(str(tmp_path / "wheels"),)))


def test_plan_uses_the_console_interpreter_when_it_has_the_requirements(catalog: Any, tmp_path: Path) -> None:
    runtimes = _runtimes(tmp_path)
    tinyrl = catalog.get("tinyrl/grpo")
    plan = runtimes.plan(tinyrl, "1.0.0", CPU)
    assert plan.spec is None and "satisfies numpy>=1.24, PyYAML>=6" in plan.note
    assert runtimes.plan(catalog.get("custom/custom"), "1.0.0", CPU).spec is None
    # without the console's environment, or with a requirement it lacks, the runtime is built
    alone = _runtimes(tmp_path, console_env=False).plan(tinyrl, "1.0.0", CPU).spec
    assert alone is not None and alone.runtime_id == "tinyrl-1.0.0" and alone.requirements == ("numpy>=1.24", "PyYAML>=6")
    extra = _runtimes(tmp_path, requires={"tinyrl-1.0.0": ("sf-probe-absent==1.0",)}).plan(tinyrl, "1.0.0", CPU)
    assert extra.spec is not None and extra.spec.requirements == ("numpy>=1.24", "PyYAML>=6", "sf-probe-absent==1.0")
    runtimes.shutdown()


def test_cpu_runtimes_pin_torchs_cpu_build(catalog: Any, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "torch-2.13.0+cpu-py3-none-any.whl").write_bytes(b"")
    runtimes = _runtimes(tmp_path)
    trl = catalog.get("trl/sft")
    cpu = runtimes.plan(trl, "1.10.0", CPU).spec
    gpu = runtimes.plan(trl, "1.10.0", GPU).spec
    assert cpu is not None and cpu.constraints == ("torch==2.13.0+cpu",) and not cpu.extra_index_urls
    assert gpu is not None and gpu.constraints == () and gpu.kind == GPU
    assert cpu.dirname != gpu.dirname and cpu.dirname.startswith("trl-1.10.0-py")
    # without a local CPU wheel, PyTorch's CPU index is added and the resolution is checked first
    bare = Runtimes(_settings(tmp_path / "b"), pip_config=PipConfig()).plan(trl, "1.10.0", CPU).spec
    assert bare is not None and bare.extra_index_urls and bare.cpu_check == "cpu-build"
    runtimes.shutdown()
