"""`check_init_from`: an `init_from` must name an artifact the submitter may read (the registry's answer)."""

from __future__ import annotations

from starforge.console.services.admission.checks import check_init_from
from starforge.console.services.admission.context import Resolutions
from starforge.console.services.registries.artifacts import ArtifactView

from .contexts import context, job, triples

REF = "run/r-7f3k2m9q1x/checkpoint@step=200"


def test_a_job_without_init_from_passes() -> None:
    assert check_init_from(context()) == []


def test_an_init_from_the_registry_resolved_passes() -> None:
    found = ArtifactView("r-7f3k2m9q1x", "checkpoint", "/state/runs/alice/toy/r-7f3k2m9q1x/ckpt", "hf", 200, 10)
    ctx = context(job(spec__model={"init_from": REF}), resolutions=Resolutions(init_from=found))
    assert check_init_from(ctx) == []


def test_an_init_from_naming_no_readable_artifact_is_refused_with_the_run_s_artifact_list() -> None:
    [problem] = check_init_from(context(job(spec__model={"init_from": REF})))
    assert triples([problem]) == [("spec.model.init_from", "artifact_unknown",
                                   "list the run's artifacts with `sf job artifacts r-7f3k2m9q1x`; only your own runs "
                                   "can be used")]
    assert problem.message == f"{REF} names no artifact you can read"
