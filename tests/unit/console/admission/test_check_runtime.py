"""`check_runtime`: a recipe this console could not start on one of the job's series is refused at
`spec.framework.kind` (GPU-only frameworks on a series without GPUs, a file entrypoint without its checkout, no
runtime requirements for a module the console cannot import)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from starforge.console.services.admission.checks import check_runtime
from starforge.console.services.admission.context import AdmissionContext
from starforge.engines.runtimes import RuntimeSettings
from tests.unit.console.runtimes._bare_recipe import bare_module_recipe

from .contexts import context, job, triples

RUNTIMES = RuntimeSettings(cache_dir=Path("/nonexistent/runtimes"), hub_cache=Path("/nonexistent/hub"))


def _ctx(recipe_id: str, version: str, *series: str, **changes: object) -> AdmissionContext:
    framework = recipe_id.split("/")[0]
    spec = job(spec__recipe={"name": recipe_id, "version": version, "digest": "sha256:" + "0" * 64},
               spec__framework={"kind": framework, "version": version, "runtime_id": f"{framework}-{version}"},
               spec__resources={"pools": [{"name": f"p{i}", "nodes": 1, "gpus_per_node": 1, "series": s}
                                          for i, s in enumerate(series)]})
    changes.setdefault("settings__runtimes", RUNTIMES)
    return context(spec, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(("recipe", "version", "series"), [
    ("tinyrl/grpo", "1.0.0", "cpu"),
    ("trl/sft", "1.10.0", "cpu"),
    ("trl/grpo", "1.10.0", "h200"),
    ("verl/grpo", "0.9.0", "h200"),
    ("custom/custom", "user-managed", "cpu"),  # user-managed: the job brings its own runtime
])
def test_a_recipe_the_console_can_start_on_the_series_passes(recipe: str, version: str, series: str) -> None:
    assert check_runtime(_ctx(recipe, version, series)) == []


def test_a_recipe_the_catalog_did_not_know_is_left_to_the_handshake() -> None:
    assert check_runtime(_ctx("nemo-rl/grpo", "0.7.0", "cpu", recipe=None)) == []


def test_a_gpu_only_framework_on_a_series_without_gpus_is_refused() -> None:
    [problem] = check_runtime(_ctx("nemo-rl/grpo", "0.7.0", "cpu"))
    assert triples([problem]) == [("spec.framework.kind", "framework_unavailable",
                                   "choose a profile whose series has GPUs")]
    assert problem.message == "nemo-rl runs on GPUs only, and series 'cpu' has none"
    assert problem.data == {"got": "nemo-rl"}


def test_the_deployment_names_its_gpu_only_frameworks_and_series_without_gpus() -> None:
    [problem] = check_runtime(_ctx("verl/grpo", "0.9.0", "h200", settings__runtimes=RuntimeSettings(
        cache_dir=RUNTIMES.cache_dir, hub_cache=RUNTIMES.hub_cache, cpu_series=("cpu", "h200"))))
    assert problem.message == "verl runs on GPUs only, and series 'h200' has none"
    assert check_runtime(_ctx("verl/grpo", "0.9.0", "cpu", settings__runtimes=RuntimeSettings(
        cache_dir=RUNTIMES.cache_dir, hub_cache=RUNTIMES.hub_cache, gpu_only=()))) == []


def test_a_file_entrypoint_without_a_checkout_is_refused_with_the_setting_to_add(tmp_path: Path) -> None:
    hint = "an operator sets framework_dirs: {nemo-rl: /path/to/checkout} in the console configuration"
    [problem] = check_runtime(_ctx("nemo-rl/grpo", "0.7.0", "h200"))
    assert triples([problem]) == [("spec.framework.kind", "framework_unavailable", hint)]
    assert problem.message == ("recipe nemo-rl/grpo runs examples/run_grpo_math.py from a nemo-rl checkout, and this "
                               "console has none")
    missing = tmp_path / "nemo-rl"
    [problem] = check_runtime(_ctx("nemo-rl/grpo", "0.7.0", "h200", settings__framework_dirs={"nemo-rl": str(missing)}))
    assert problem.message == ("recipe nemo-rl/grpo runs examples/run_grpo_math.py from a nemo-rl checkout, and this "
                               f"console has none ({missing} is not a folder)")
    missing.mkdir()
    checkout = _ctx("nemo-rl/grpo", "0.7.0", "h200", settings__framework_dirs={"nemo-rl": str(missing)})
    assert check_runtime(checkout) == []


def test_a_module_without_runtime_requirements_the_console_cannot_import_is_refused(tmp_path: Path) -> None:
    assert importlib.util.find_spec("evalkit") is None, "this test assumes evalkit is not installed"
    bare = bare_module_recipe(tmp_path)
    [problem] = check_runtime(_ctx("evalkit/benchmark", "1.0.0", "cpu", recipe=bare))
    assert triples([problem]) == [("spec.framework.kind", "framework_unavailable",
                                   "an operator lists what evalkit-1.0.0 needs under runtimes.requires.evalkit-1.0.0 "
                                   "in the console configuration")]
    assert problem.message == ("recipe evalkit/benchmark declares no runtime requirements, and evalkit is not "
                               "installed where the console runs, so no runtime can be built for it")
    listed = RuntimeSettings(cache_dir=RUNTIMES.cache_dir, hub_cache=RUNTIMES.hub_cache,
                             requires={"evalkit-1.0.0": ("evalkit==1.0.0",)})
    assert check_runtime(_ctx("evalkit/benchmark", "1.0.0", "cpu", recipe=bare, settings__runtimes=listed)) == []


def test_one_problem_for_the_first_series_the_recipe_cannot_start_on() -> None:
    [problem] = check_runtime(_ctx("nemo-rl/grpo", "0.7.0", "h200", "cpu"))
    assert problem.message.startswith("recipe nemo-rl/grpo runs examples/run_grpo_math.py")
    [problem] = check_runtime(_ctx("nemo-rl/grpo", "0.7.0", "cpu", "h200"))
    assert problem.message == "nemo-rl runs on GPUs only, and series 'cpu' has none"
