"""Pushing a dataset: any user uploads a file or folder (gzip tar) as a new, immutable version of a dataset in their
namespace, which jobs may then read (`spec.data.train.dataset`, `spec.data.validation.dataset`).

Order: the caller's right to write, then the namespace, then the name and version, then whether the version is
free (409); then the archive is unpacked as hostile input outside the transaction; then, in one write
transaction, the version's row is written (a concurrent push of the same version fails there, 409) and the
unpacked folder is moved into place.

Tier: use case (owns its transactions; `registries.data` records the version, `dataset_store` holds the files).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...bundle import BundleLimits, UnsafeBundle
from ...contract import Problem, VersionedRef, parse_versioned_ref
from ..runtime import Runtime
from . import dataset_store, roles
from .accounts import UserView
from .errors import Conflict, Forbidden, Rejected
from .registries import data
from .uploads import SpooledBody

__all__ = ["DATASET_LIMITS", "MAX_DATASET_BYTES", "push"]

GiB = 1024**3
MAX_DATASET_BYTES = 8 * GiB  # the compressed upload (settings.max_dataset_bytes); spooled to disk, never memory
DATASET_LIMITS = BundleLimits(max_bytes=MAX_DATASET_BYTES, max_files=100_000, max_file_bytes=16 * GiB,
                              max_total_bytes=64 * GiB, max_ratio=200.0)


def _target(user: UserView, owner: str, name: str, version: str, visibility: str) -> VersionedRef:
    owner = owner or user.username
    if not roles.acts_for(user, owner):
        raise Forbidden(f"you may push datasets only to your own namespace ({user.username}), not {owner}")
    problems: list[Problem] = []
    if not name:
        problems.append(Problem("name", "missing_field", "the dataset needs a name", "push NAME@VERSION"))
    if not version:
        problems.append(Problem("version", "version_required", "the dataset needs a version; versions are immutable",
                                "push NAME@VERSION, e.g. gsm8k@v1"))
    if visibility not in ("private", "public"):
        problems.append(Problem("visibility", "invalid_request", "visibility must be private or public",
                                "send private (the default) or public"))
    if problems:
        raise Rejected("The dataset was refused", problems)
    ref, problems = parse_versioned_ref(f"{owner}/{name}@{version}", "dataset")
    if ref is None:
        raise Rejected("The dataset was refused", problems)
    return ref


def _archive_problems(problems: list[Problem]) -> list[Problem]:
    return [replace(p, field="dataset") for p in problems]


def push(rt: Runtime, *, user: UserView, owner: str = "", name: str, version: str, visibility: str = "private",
         upload: SpooledBody) -> dict[str, Any]:
    """Unpack a spooled gzip tar as `<owner>/<name>@<version>` (owner: the caller by default) and register it;
    return `{ref, id, version, visibility, files, total_bytes}`. Blocking: call it in the threadpool, while the
    spooled body is open."""
    if not roles.can_publish(user):
        raise Forbidden("viewers can read but not push datasets")
    ref = _target(user, owner, name, version, visibility)
    with rt.db.read() as db:
        if data.version_exists(db, "dataset", ref):
            raise Conflict(f"dataset {ref} already exists; versions are immutable: push a new version")
    state = rt.settings.state_dir
    try:
        limits = replace(DATASET_LIMITS, max_bytes=rt.settings.max_dataset_bytes)
        staged = dataset_store.unpack(state, upload.stream(), limits)
    except UnsafeBundle as exc:
        raise Rejected("The dataset archive was refused", _archive_problems(list(exc.problems))) from exc
    installed = None
    try:
        if staged.files == 0:
            raise Rejected("The dataset was refused", [Problem("dataset", "dataset_empty", "the archive holds no file",
                                                               "push a file, or a folder with files in it")])
        with rt.db.write() as db:
            view = data.add_version(db, "dataset", ref, str(dataset_store.data_dir(state, ref)),
                                    visibility=visibility)
            installed = dataset_store.install(state, staged, ref)
            dataset_store.write_index(state, ref, staged)
    except BaseException:
        dataset_store.discard(staged.path)
        if installed is not None:
            dataset_store.discard(installed)
        raise
    return {"ref": view.ref, "id": f"{view.owner}/{view.name}", "version": view.version,
            "visibility": view.visibility, "files": staged.files, "total_bytes": staged.total_bytes}
