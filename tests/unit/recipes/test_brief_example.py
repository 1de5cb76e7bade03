"""The product brief's example is accepted by our builtin catalog; an old core version is refused naming both."""

from __future__ import annotations

from starforge.recipes import check_document, load_catalog
from tests.brief import filled


def _entry() -> dict:  # type: ignore[type-arg]
    catalog = load_catalog(overlays=False)
    return next(e for e in catalog.payload()["recipes"] if e["name"] == "nemo-rl/grpo")


def test_the_brief_example_is_accepted_and_normalised() -> None:
    catalog = load_catalog(overlays=False)
    verdict = check_document(filled(_entry()), catalog)
    assert verdict.problems == [], verdict.problems
    assert verdict.spec is not None
    assert verdict.spec.spec.hyperparams["learning_rate"] == 1e-6  # the config path became the parameter name
    assert "policy.optimizer.kwargs.lr" not in verdict.spec.spec.hyperparams
    assert verdict.spec.spec.resources.roles == {"trainer": "train"}


def test_the_brief_core_version_is_refused_with_both_versions() -> None:
    catalog = load_catalog(overlays=False)
    verdict = check_document(filled(_entry(), core_version="0.3.2"), catalog)
    problem = verdict.problems[0]
    assert problem.field == "provenance.core_version"
    assert "0.3.2" in problem.message and ">=0.4" in problem.message and "nemo-rl/grpo@0.7.0" in problem.message
