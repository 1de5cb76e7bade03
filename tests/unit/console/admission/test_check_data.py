"""`check_data`: every registry reference of a spec is registered and readable; an output version must be new."""

from __future__ import annotations

from typing import Any

from starforge.console.services.admission.checks import check_data
from starforge.console.services.admission.context import Resolutions
from starforge.console.services.registries.data import AssetView

from .contexts import context, job, triples

DATA: dict[str, Any] = {
    "train": {"dataset": "alice/gsm8k@v2", "path": "train.jsonl"},
    "validation": {"dataset": "alice/gsm8k@v2", "path": "test.jsonl"},
    "corpus": "alice/handbook@v1",
    "volumes": ["alice/docs", "team/tools"],
    "environment": "alice/math-env@1.0",
    "output_dataset": "alice/gsm8k-clean@v3",
    "quality": {"overlap_with": "alice/gsm8k-test@v1"},
}
BASE = "alice/qwen-ft@v1"  # a registered model as `spec.model.base`
KEYS = [  # how admission's resolver files each reference: "<field>=<reference>"
    "spec.model.base=alice/qwen-ft@v1",
    "spec.data.train.dataset=alice/gsm8k@v2",
    "spec.data.validation.dataset=alice/gsm8k@v2",
    "spec.data.corpus=alice/handbook@v1",
    "spec.data.volumes[]=alice/docs",
    "spec.data.volumes[]=team/tools",
    "spec.data.environment=alice/math-env@1.0",
    "spec.data.quality.overlap_with=alice/gsm8k-test@v1",
]
DATASET_HINT = ("`sf dataset ls` lists the datasets you may read; push your own with `sf dataset push PATH "
                "NAME@VERSION`, or ask its owner for access")


def _asset(key: str) -> AssetView:
    owner, _, rest = key.partition("=")[2].partition("/")
    name, _, version = rest.partition("@")
    return AssetView("dataset", owner, name, version, f"/state/data/{owner}/{name}/{version}", "private")


def _resolved(*missing: str, taken: frozenset[str] = frozenset()) -> Resolutions:
    return Resolutions(assets={key: None if key in missing else _asset(key) for key in KEYS}, taken_outputs=taken)


def test_a_job_without_references_passes() -> None:
    assert check_data(context()) == []


def test_a_hub_model_id_is_no_reference() -> None:
    assert check_data(context(job(spec__model={"base": "Qwen/Qwen3-8B"}))) == []


def test_every_reference_resolved_and_a_new_output_version_pass() -> None:
    ctx = context(job(spec__model={"base": BASE}, spec__data=DATA), resolutions=_resolved())
    assert check_data(ctx) == []


def test_each_unresolved_reference_is_refused_at_its_field_with_its_kind_s_code_and_hint() -> None:
    ctx = context(job(spec__model={"base": BASE}, spec__data=DATA), resolutions=_resolved(*KEYS))
    problems = check_data(ctx)
    assert triples(problems) == [
        ("spec.model.base", "model_unknown",
         "`sf model ls` lists the models you may use; push your own with `sf model push DIR NAME@VERSION`, "
         "or ask its owner to make it public"),
        ("spec.data.train.dataset", "reference_unknown", DATASET_HINT),
        ("spec.data.validation.dataset", "reference_unknown", DATASET_HINT),
        ("spec.data.corpus", "corpus_unknown",
         "`sf corpus ls` lists the corpora you may read; push your own with `sf corpus push DIR NAME@VERSION`, "
         "or ask its owner for access"),
        ("spec.data.volumes[]", "reference_unknown",
         "ask an operator to register it (`sf console volume add alice/docs PATH`) or to grant you access"),
        ("spec.data.volumes[]", "reference_unknown",
         "ask an operator to register it (`sf console volume add team/tools PATH`) or to grant you access"),
        ("spec.data.environment", "reference_unknown",
         "ask an operator to register it (`sf console environment add alice/math-env@1.0 PATH`) or to grant you "
         "access"),
        ("spec.data.quality.overlap_with", "reference_unknown", DATASET_HINT),
    ]
    assert problems[1].message == "dataset alice/gsm8k@v2 is not registered or you may not read it"
    assert problems[4].message == "volume alice/docs is not registered or you may not read it"
    assert [p.data for p in problems] == [{"got": key.partition("=")[2]} for key in KEYS]


def test_only_the_unresolved_reference_is_refused() -> None:
    ctx = context(job(spec__data=DATA), resolutions=_resolved("spec.data.corpus=alice/handbook@v1"))
    [problem] = check_data(ctx)
    assert (problem.field, problem.code, problem.message) == (
        "spec.data.corpus", "corpus_unknown", "corpus alice/handbook@v1 is not registered or you may not read it")


def test_a_reference_resolved_under_another_field_does_not_count() -> None:
    moved = Resolutions(assets={"spec.data.validation.dataset=alice/gsm8k@v2": _asset("x=alice/gsm8k@v2")})
    ctx = context(job(spec__data={"train": DATA["train"]}), resolutions=moved)
    assert [p.field for p in check_data(ctx)] == ["spec.data.train.dataset"]


def test_an_output_dataset_version_that_exists_is_refused() -> None:
    ctx = context(job(spec__data=DATA), resolutions=_resolved(taken=frozenset({"alice/gsm8k-clean@v3"})))
    [problem] = check_data(ctx)
    assert triples([problem]) == [("spec.data.output_dataset", "reference_unknown",
                                   "pick a version that does not exist yet")]
    assert problem.message == "dataset version alice/gsm8k-clean@v3 already exists; output versions must be new"
