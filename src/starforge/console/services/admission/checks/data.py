"""Registry references: a registered base model, corpus, datasets, volumes, environment and quality targets must be
registered and readable."""

from __future__ import annotations

from .....contract import Data, Problem, Spec, is_model_ref
from ..context import AdmissionContext

__all__ = ["asset_references", "check_data", "data_references"]

_LIST_HINTS = {
    "dataset": "`sf dataset ls` lists the datasets you may read; push your own with `sf dataset push PATH "
               "NAME@VERSION`, or ask its owner for access",
    "model": "`sf model ls` lists the models you may use; push your own with `sf model push DIR NAME@VERSION`, "
             "or ask its owner to make it public",
    "corpus": "`sf corpus ls` lists the corpora you may read; push your own with `sf corpus push DIR NAME@VERSION`, "
              "or ask its owner for access",
}
_CODES = {"corpus": "corpus_unknown", "model": "model_unknown"}


def data_references(data: Data) -> list[tuple[str, str, str]]:
    """Return `(field, kind, reference)` for every data reference of a spec's `data` section, in field order."""
    refs: list[tuple[str, str, str]] = []
    if data.train is not None and data.train.dataset:
        refs.append(("spec.data.train.dataset", "dataset", data.train.dataset))
    if data.validation is not None and data.validation.dataset:
        refs.append(("spec.data.validation.dataset", "dataset", data.validation.dataset))
    if data.corpus:
        refs.append(("spec.data.corpus", "corpus", data.corpus))
    for volume in data.volumes:
        refs.append(("spec.data.volumes[]", "volume", volume))
    if data.environment:
        refs.append(("spec.data.environment", "environment", data.environment))
    quality = data.quality
    if quality is not None and quality.overlap_with:
        refs.append(("spec.data.quality.overlap_with", "dataset", quality.overlap_with))
    return refs


def asset_references(spec: Spec) -> list[tuple[str, str, str]]:
    """Return `(field, kind, reference)` for every registry reference of a spec: a registered base model
    (`spec.model.base` as `<owner>/<name>@<version>`), then its data references."""
    base = spec.model.base
    model = [("spec.model.base", "model", base)] if base and is_model_ref(base) else []
    return model + data_references(spec.data)


def check_data(ctx: AdmissionContext) -> list[Problem]:
    """Refuse references that are unknown or unreadable, and an output dataset version that already exists."""
    problems = []
    for field, kind, ref in asset_references(ctx.spec.spec):
        if ctx.resolutions.assets.get(f"{field}={ref}") is None:
            hint = _LIST_HINTS.get(kind) or (f"ask an operator to register it (`sf console {kind} add {ref} PATH`) "
                                             "or to grant you access")
            problems.append(Problem(field, _CODES.get(kind, "reference_unknown"),
                                    f"{kind} {ref} is not registered or you may not read it", hint, {"got": ref}))
    output = ctx.spec.spec.data.output_dataset
    if output and output in ctx.resolutions.taken_outputs:
        problems.append(
            Problem("spec.data.output_dataset", "reference_unknown",
                    f"dataset version {output} already exists; output versions must be new",
                    "pick a version that does not exist yet")
        )
    return problems
