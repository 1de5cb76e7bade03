"""The `X-Forge-Meta` header of a submission (wire-protocol §7.2): key order, bare profile, ASCII-only JSON."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Mapping
from typing import Any

from starforge.contract import profile_name

__all__ = ["META_ORDER", "bare_profile", "build_meta", "empty_bundle", "encode_meta"]

META_ORDER = ("exp", "profile", "git_commit", "git_dirty", "config_sha", "project")


bare_profile = profile_name  # the profile name of a `[roles=]name[:gpus]` expression (`actor=h200:8` → `h200`)


def _get(doc: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(key)
    return doc


def build_meta(
    spec: Mapping[str, Any],
    *,
    profile: str,
    exp: str | None = None,
    extra: Mapping[str, Any] | None = None,
    allow_pending: bool = False,
) -> dict[str, Any]:
    """Return the meta object in wire order: exp, profile, git_commit, git_dirty, config_sha, project, extras, spec.

    Values missing from `extra` come from the spec (`source.exp`, `provenance`, `metadata.project`); `git_dirty`
    is always present, `git_commit`/`config_sha` only when known, `project` only when non-empty. `allow_pending`
    adds `"allow_pending": true` (our extension: a job no capacity of the deployment serves waits instead of
    being refused).
    """
    extra = dict(extra or {})
    provenance = _get(spec, "provenance")
    provenance = provenance if isinstance(provenance, Mapping) else {}
    exp = exp or extra.pop("exp", None) or _get(spec, "spec", "source", "exp") or ""
    extra.pop("exp", None)
    known: dict[str, Any] = {
        "exp": exp,
        "profile": bare_profile(profile),
        "git_commit": extra.pop("git_commit", provenance.get("git_commit")),
        "git_dirty": bool(extra.pop("git_dirty", provenance.get("git_dirty", False))),
        "config_sha": extra.pop("config_sha", provenance.get("config_sha")),
        "project": extra.pop("project", _get(spec, "metadata", "project")),
    }
    extra.pop("profile", None)
    extra.pop("spec", None)
    meta = {k: v for k, v in known.items() if v is not None and (k != "project" or v)}
    meta.update(extra)
    if allow_pending:
        meta["allow_pending"] = True
    meta["spec"] = spec
    return meta


def encode_meta(meta: Mapping[str, Any]) -> str:
    """Return the header value: compact JSON in the given key order, non-ASCII escaped as `\\uXXXX`."""
    return json.dumps(meta, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def empty_bundle() -> bytes:
    """Return a deterministic gzip tar with no members, for submissions that carry no files."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT):
        pass
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()
