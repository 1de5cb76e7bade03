"""Pushing a dataset, corpus or model: any user uploads a file or folder (gzip tar) as a new, immutable version in
their namespace, which jobs may then read (`spec.data.train.dataset`, `spec.data.validation.dataset`,
`spec.data.corpus`, `spec.model.base` as `<owner>/<name>@<version>`).

Order: the caller's right to write, then the namespace, then the name and version, then whether the version is
free (409); then the archive is unpacked as hostile input outside the transaction; then, in one write
transaction, the version's row is written (a concurrent push of the same version fails there, 409) and the
unpacked folder is moved into place.

Tier: use case (owns its transactions; `registries.data` records the version, `dataset_store` holds the files).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ....bundle import BundleLimits, UnsafeBundle
from ....contract import Problem, VersionedRef, parse_versioned_ref
from ..accounts import roles
from ..accounts.credentials import UserView
from ..context import Runtime
from ..errors import Conflict, Forbidden, Rejected
from ..uploads import SpooledBody
from . import data, dataset_store
from .dataset_store import PUSH_KINDS

__all__ = ["DATASET_LIMITS", "MAX_DATASET_BYTES", "PUSH_KINDS", "push"]

GiB = 1024**3
MAX_DATASET_BYTES = 8 * GiB  # the compressed upload (settings.max_dataset_bytes); spooled to disk, never memory
DATASET_LIMITS = BundleLimits(max_bytes=MAX_DATASET_BYTES, max_files=100_000, max_file_bytes=16 * GiB,
                              max_total_bytes=64 * GiB, max_ratio=200.0)
MAX_DESCRIPTION = 2000  # characters of a pushed version's description


def _target(user: UserView, kind: str, owner: str, name: str, version: str, visibility: str,
            description: str) -> VersionedRef:
    owner = owner or user.username
    if not roles.acts_for(user, owner):
        raise Forbidden(f"you may push {kind} versions only to your own namespace ({user.username}), not {owner}")
    problems: list[Problem] = []
    if not name:
        problems.append(Problem("name", "missing_field", f"the {kind} needs a name", "push NAME@VERSION"))
    if not version:
        problems.append(Problem("version", "version_required", f"the {kind} needs a version; versions are immutable",
                                "push NAME@VERSION, e.g. gsm8k@v1"))
    if visibility not in ("private", "public"):
        problems.append(Problem("visibility", "invalid_request", "visibility must be private or public",
                                "send private (the default) or public"))
    if len(description) > MAX_DESCRIPTION:
        problems.append(Problem("description", "value_too_long",
                                f"the description is longer than {MAX_DESCRIPTION} characters",
                                f"shorten it to at most {MAX_DESCRIPTION} characters"))
    if problems:
        raise Rejected(f"The {kind} was refused", problems)
    ref, problems = parse_versioned_ref(f"{owner}/{name}@{version}", kind)
    if ref is None:
        raise Rejected(f"The {kind} was refused", problems)
    return ref


def _archive_problems(kind: str, problems: list[Problem]) -> list[Problem]:
    return [replace(p, field=kind) for p in problems]


def push(rt: Runtime, *, user: UserView, kind: str = "dataset", owner: str = "", name: str, version: str,
         visibility: str = "private", description: str = "", upload: SpooledBody) -> dict[str, Any]:
    """Unpack a spooled gzip tar as the `kind` version `<owner>/<name>@<version>` (owner: the caller by default;
    kind: one of PUSH_KINDS) and register it; return `{ref, id, version, visibility, files, total_bytes}`.
    Blocking: call it in the threadpool, while the spooled body is open."""
    if kind not in PUSH_KINDS:
        raise ValueError(f"{kind!r} is not pushed by users")  # a route's bug: each route names its kind
    if not roles.can_publish(user):
        raise Forbidden(f"viewers can read but not push {kind} versions")
    ref = _target(user, kind, owner, name, version, visibility, description)
    with rt.db.read() as db:
        if data.version_exists(db, kind, ref):
            raise Conflict(f"{kind} {ref} already exists; versions are immutable: push a new version")
    state = rt.settings.state_dir
    try:
        limits = replace(DATASET_LIMITS, max_bytes=rt.settings.max_dataset_bytes)
        staged = dataset_store.unpack(state, upload.stream(), limits)
    except UnsafeBundle as exc:
        raise Rejected(f"The {kind} archive was refused", _archive_problems(kind, list(exc.problems))) from exc
    installed = None
    try:
        if staged.files == 0:
            raise Rejected(f"The {kind} was refused", [Problem(kind, "dataset_empty", "the archive holds no file",
                                                                "push a file, or a folder with files in it")])
        with rt.db.write() as db:
            view = data.add_version(db, kind, ref, str(dataset_store.data_dir(state, ref, kind)),
                                    visibility=visibility)
            installed = dataset_store.install(state, staged, ref, kind)
            dataset_store.write_index(state, ref, staged, kind, description)
    except BaseException:
        dataset_store.discard(staged.path)
        if installed is not None:
            dataset_store.discard(installed)
        raise
    return {"ref": view.ref, "id": f"{view.owner}/{view.name}", "version": view.version,
            "visibility": view.visibility, "files": staged.files, "total_bytes": staged.total_bytes}
