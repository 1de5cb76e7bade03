"""`check_gpu_settings`: a `needs_gpu` setting the spec turns on is refused at `spec.hyperparams.<name>` when one of
the job's series has no GPUs (`runtimes.cpu_series`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from starforge.console.services.admission.checks import check_gpu_settings
from starforge.console.services.admission.context import AdmissionContext
from starforge.engines.runtimes import RuntimeSettings

from .contexts import context, job, triples


def _ctx(hyperparams: dict[str, Any], *series: str | None, recipe_id: str = "trl/grpo", **changes: Any
         ) -> AdmissionContext:
    spec = job(spec__recipe={"name": recipe_id, "version": "1.10.0", "digest": "sha256:" + "0" * 64},
               spec__framework={"kind": "trl", "version": "1.10.0", "runtime_id": "trl-1.10.0"},
               spec__resources={"pools": [{"name": f"p{i}", "nodes": 1, "gpus_per_node": 1,
                                           **({"series": s} if s else {})} for i, s in enumerate(series)]},
               spec__hyperparams=hyperparams)
    return context(spec, **changes)


def _hint(name: str) -> str:
    return (f"on a CPU series pass --set {name}=false (or write `{name}: false` in the experiment's config.yaml); "
            "or choose a profile whose series has GPUs")


@pytest.mark.parametrize(("hyperparams", "series"), [
    ({"bf16": True, "use_vllm": True}, ["h200"]),
    ({"bf16": True}, [None]),  # the profile's series, h200
    ({"bf16": False, "use_vllm": False}, ["cpu"]),
    ({}, ["cpu"]),  # a default of true is the experiment config's business, not a setting the spec turns on
])
def test_gpu_settings_on_gpu_series_and_settings_left_off_pass(hyperparams: dict[str, Any], series: list[str | None],
                                                               ) -> None:
    assert check_gpu_settings(_ctx(hyperparams, *series, profile="h200:8")) == []


def test_a_recipe_the_catalog_did_not_know_is_left_to_the_handshake() -> None:
    assert check_gpu_settings(_ctx({"bf16": True}, "cpu", recipe=None)) == []


def test_each_gpu_setting_turned_on_for_a_cpu_series_is_refused_at_its_hyperparameter() -> None:
    problems = check_gpu_settings(_ctx({"bf16": True, "use_vllm": True}, "h200", "cpu"))
    assert sorted(triples(problems)) == [
        ("spec.hyperparams.bf16", "needs_gpu", _hint("bf16")),
        ("spec.hyperparams.use_vllm", "needs_gpu", _hint("use_vllm")),
    ]
    by_field = {p.field: p for p in problems}
    assert by_field["spec.hyperparams.bf16"].message == (
        "bf16: true needs a GPU, and series 'cpu' has none (true is its default when the experiment's config leaves "
        "it out)")
    assert by_field["spec.hyperparams.use_vllm"].message == "use_vllm: true needs a GPU, and series 'cpu' has none"
    assert by_field["spec.hyperparams.bf16"].data == {"recipe": "trl/grpo", "name": "bf16", "got": True,
                                                      "expected": False}


def test_the_deployment_s_cpu_series_are_the_ones_without_gpus() -> None:
    runtimes = RuntimeSettings(cache_dir=Path("/nonexistent/runtimes"), hub_cache=Path("/nonexistent/hub"),
                               cpu_series=("cpu", "a100"))
    [problem] = check_gpu_settings(_ctx({"bf16": True}, "a100", "cpu", "h200", settings__runtimes=runtimes))
    assert problem.message == ("bf16: true needs a GPU, and series 'a100', 'cpu' have none (true is its default when "
                               "the experiment's config leaves it out)")
    none = RuntimeSettings(cache_dir=runtimes.cache_dir, hub_cache=runtimes.hub_cache, cpu_series=())
    assert check_gpu_settings(_ctx({"bf16": True}, "cpu", settings__runtimes=none)) == []
