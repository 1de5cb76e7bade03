"""Readers for `spec.data`: corpus, volumes, output dataset, environment, train/validation splits, quality."""

from __future__ import annotations

from typing import Any

from ._build import (
    new_data,
    new_data_split,
    new_quality,
)
from ._grammar import (
    match_ref,
    parse_versioned_ref,
)
from ._model import (
    Data,
    DataSplit,
    Quality,
)
from ._walk import Walk, type_name

__all__ = ["read_data"]

_DATA_KEYS = frozenset({"train", "validation", "corpus", "volumes", "output_dataset", "environment", "quality"})
_SPLIT_KEYS = frozenset({"dataset", "split", "path"})
_QUALITY_KEYS = frozenset({"max_duplicate_ratio", "overlap_with", "max_overlap_ratio"})


def read_data(w: Walk, value: Any) -> Data | None:
    """Read `spec.data`: corpus, volumes, output_dataset, environment, train, validation, quality."""
    obj = w.obj(value, "spec.data", _DATA_KEYS)
    if obj is None:
        return None
    before = len(w.problems)
    corpus = _read_reference(w, obj, "spec.data", "corpus")
    volumes = _read_volumes(w, obj.get("volumes"))
    output = _read_reference(w, obj, "spec.data", "output_dataset", version_required=True)
    environment = _read_reference(w, obj, "spec.data", "environment")
    train = _read_split(w, obj.get("train"), "spec.data.train")
    validation = _read_split(w, obj.get("validation"), "spec.data.validation")
    quality = _read_quality(w, obj.get("quality"))
    if len(w.problems) != before:
        return None
    return new_data(train, validation, corpus, volumes, output, environment, quality)


def _read_reference(
    w: Walk, obj: dict[str, Any], parent: str, key: str, *, version_required: bool = False
) -> str:
    """Return the normalised reference at `parent.key` (`""` when unset or after reporting a problem)."""
    text = obj.get(key)
    if type(text) is str and match_ref(text) is not None and (not version_required or "@" in text):
        return text  # well-formed, hence already trimmed and its own normal form
    text = w.string(obj, parent, key)
    if not text:
        return ""
    ref, problems = parse_versioned_ref(text, f"{parent}.{key}", version_required=version_required)
    w.problems.extend(problems)
    return str(ref) if ref else ""


def _read_volumes(w: Walk, value: Any) -> tuple[str, ...]:
    items = w.list_of(value, "spec.data.volumes")
    if items is None:
        return ()
    volumes: list[str] = []
    owners_by_name: dict[str, str] = {}
    ok = True
    field = "spec.data.volumes[]"
    for item in items:
        if not isinstance(item, str):
            w.bad(field, "not_a_string", f"must be a string, got {type_name(item)}")
            ok = False
            continue
        text = item.strip()
        if "@" in text:
            w.bad(field, "volume_has_version", f"volume {text!r} cannot carry a version", "drop the @<version>")
            ok = False
            continue
        fast = match_ref(text)
        if fast is not None:
            ident, owner, name = text, fast[1], fast[2]
        else:
            ref, problems = parse_versioned_ref(text, field)
            if ref is None:
                for p in problems:
                    w.bad(field, p.code, p.message, p.hint)
                ok = False
                continue
            ident, owner, name = ref.id, ref.owner, ref.name
        if ident in volumes:
            w.warn(field, "duplicate_volume", f"volume {ident} is listed twice; the repeat was dropped")
            continue
        volumes.append(ident)
        owners_by_name.setdefault(name, owner)
    if ok and len(owners_by_name) != len(volumes):  # else every name has exactly one owner
        for vol in volumes:
            owner, name = vol.split("/")
            if owners_by_name[name] != owner:
                w.bad(
                    "spec.data.volumes",
                    "volume_name_collision",
                    f"volumes {owners_by_name[name]}/{name} and {vol} would both mount at $VOLUMES_DIR/{name}",
                    "use only one volume of each name",
                )
                break
    return tuple(volumes)


def _read_split(w: Walk, value: Any, field: str) -> DataSplit | None:
    obj = w.obj(value, field, _SPLIT_KEYS)
    if not obj:
        return None
    dataset = _read_reference(w, obj, field, "dataset")
    split = w.string(obj, field, "split")
    path = w.string(obj, field, "path")
    if dataset and path and (path.startswith("/") or ".." in path.replace("\\", "/").split("/")):
        w.bad(
            f"{field}.path",
            "path_not_relative",
            f"path {path!r} must be a relative file inside dataset {dataset}",
            "give the file's path inside the dataset, e.g. train.parquet",
        )
    if not (dataset or split or path):
        return None
    return new_data_split(dataset, split or "", path or "")


def _read_quality(w: Walk, value: Any) -> Quality | None:
    obj = w.obj(value, "spec.data.quality", _QUALITY_KEYS)
    if not obj:
        return None
    overlap_with = _read_reference(w, obj, "spec.data.quality", "overlap_with")
    raw = obj.get("max_duplicate_ratio")
    duplicate = None if raw is None else w.finite_number(raw, "spec.data.quality", "max_duplicate_ratio")
    raw = obj.get("max_overlap_ratio")
    overlap = None if raw is None else w.finite_number(raw, "spec.data.quality", "max_overlap_ratio")
    _check_ratio(w, "max_duplicate_ratio", duplicate)
    _check_ratio(w, "max_overlap_ratio", overlap)
    if overlap is not None and not overlap_with:
        w.bad(
            "spec.data.quality.overlap_with",
            "overlap_ratio_without_target",
            "max_overlap_ratio needs overlap_with (the dataset to compare against)",
            "set overlap_with to <owner>/<name>[@version] or drop max_overlap_ratio",
        )
    if not overlap_with and duplicate is None and overlap is None:
        return None
    return new_quality(duplicate, overlap_with, overlap)


def _check_ratio(w: Walk, key: str, ratio: float | None) -> None:
    if ratio is not None and not 0 <= ratio <= 1:
        w.bad(f"spec.data.quality.{key}", "out_of_range", f"must be within [0, 1], got {ratio}")
