"""Manifest rules for entrypoints (§2.3), runtime variants (§2.1) and runtime artifacts (§2.2)."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from ._checker import SAFE_SEGMENT, Checker, is_relative_path, join

__all__ = ["ENTRYPOINT_KINDS", "check_artifact", "check_entrypoint", "check_oci_reference", "check_runtime", "check_specifier"]

_EXACT_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+(?:[A-Za-z0-9.+-]*)?", re.ASCII)
_VERSION_KEY = re.compile(r"(?:[0-9]+\.[0-9]+\.[0-9]+(?:[A-Za-z0-9.+-]*)?|[0-9a-f]{40})", re.ASCII)
_OCI_DIGEST = re.compile(r"\S+@sha256:[0-9a-f]{64}")
_HEX64 = re.compile(r"[0-9a-f]{64}", re.ASCII)
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*", re.ASCII)
_PINNED = {"verl": "verl", "trl": "trl", "pytorch": "torch"}
_VARIANT_KEYS = frozenset(
    {"runtime_id", "requires", "source", "deployment_artifact", "entrypoint", "status", "sunset", "image"}
)
_ARTIFACT_KEYS = frozenset(
    {"kind", "reference", "sha256", "source_digest", "architecture", "ray_version", "python_executable",
     "requires_python", "capabilities"}
)
ENTRYPOINT_KINDS = ("module", "file", "experiment")


def check_oci_reference(reference: str) -> str:
    """Return why `reference` is not a valid OCI reference (§2.2), or "" when it is."""
    if not reference.strip():
        return "must not be empty"
    if any(ch.isspace() for ch in reference):
        return "must not contain whitespace"
    if "@" in reference and not _OCI_DIGEST.fullmatch(reference):
        return "a reference with '@' must end in @sha256:<64 lowercase hex>"
    return ""


def check_entrypoint(c: Checker, value: Any, field: str, *, required: bool = True) -> None:
    """Check an entrypoint `{kind, value, experiment_override?}` at `field`."""
    obj = c.mapping(value, field, required=required)
    if obj is None:
        return
    for key in obj:
        if key not in ("kind", "value", "experiment_override"):
            c.bad(join(field, key), "unknown entrypoint key (kind, value, experiment_override)")
    kind = c.enum(obj, "kind", field, ENTRYPOINT_KINDS, required=True)
    text = c.string(obj, "value", field, required=True)
    if text is not None and kind == "module" and not _MODULE.fullmatch(text):
        c.bad(join(field, "value"), f"{text!r} is not a Python module name")
    if text is not None and kind in ("file", "experiment") and not is_relative_path(text):
        c.bad(join(field, "value"), f"{text!r} must be a relative path without '..'")
    override = c.string(obj, "experiment_override", field)
    if override is not None:
        if kind == "experiment":
            c.bad(join(field, "experiment_override"), "is not allowed with kind experiment")
        elif not is_relative_path(override):
            c.bad(join(field, "experiment_override"), f"{override!r} must be a relative path without '..'")


def check_artifact(c: Checker, value: Any, field: str) -> str | None:
    """Check a runtime artifact (§2.2) at `field`; return its kind when readable."""
    obj = c.mapping(value, field)
    if obj is None:
        return None
    for key in obj:
        if key not in _ARTIFACT_KEYS:
            c.bad(join(field, key), "unknown artifact key")
    kind = c.enum(obj, "kind", field, ("oci", "sif", "enroot-sqsh"), required=True)
    reference = c.string(obj, "reference", field, required=True)
    if kind == "oci" and reference is not None:
        why = check_oci_reference(reference)
        if why:
            c.bad(join(field, "reference"), why)
    if kind in ("sif", "enroot-sqsh"):
        suffix = ".sif" if kind == "sif" else ".sqsh"
        if reference is not None and not (reference.startswith("/") and reference.endswith(suffix)):
            c.bad(join(field, "reference"), f"must be an absolute path ending in {suffix}")
        sha = c.string(obj, "sha256", field, required=True)
        if sha is not None and not _HEX64.fullmatch(sha):
            c.bad(join(field, "sha256"), "must be 64 lowercase hex characters")
    if kind == "enroot-sqsh":
        digest = c.string(obj, "source_digest", field, required=True)
        if digest is not None and not (digest.startswith("sha256:") and _HEX64.fullmatch(digest[7:])):
            c.bad(join(field, "source_digest"), "must be sha256:<64 lowercase hex>")
        c.enum(obj, "architecture", field, ("amd64", "arm64"), required=True)
    ray = c.string(obj, "ray_version", field)
    if ray is not None and not _EXACT_VERSION.fullmatch(ray):
        c.bad(join(field, "ray_version"), f"{ray!r} is not an exact version such as 2.55.1")
    python = c.string(obj, "python_executable", field, nonempty=True)
    if python is not None and any(ch.isspace() for ch in python):
        c.bad(join(field, "python_executable"), "must not contain whitespace")
    requires_python = c.string(obj, "requires_python", field)
    if requires_python is not None:
        _specifier(c, requires_python, join(field, "requires_python"))
    c.strings(obj, "capabilities", field)
    return kind


def _specifier(c: Checker, text: str, field: str) -> None:
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        c.bad(field, f"{text!r} is not a PEP 440 version specifier")


def check_specifier(c: Checker, text: str, field: str) -> None:
    """Record a problem unless `text` is a valid PEP 440 specifier set."""
    _specifier(c, text, field)


def check_runtime(c: Checker, value: Any, framework: str | None) -> None:
    """Check the `runtime` section: versions, default version and every variant (§2.1)."""
    obj = c.mapping(value, "runtime")
    if obj is None:
        return
    for key in obj:
        if key not in ("default_version", "versions"):
            c.bad(join("runtime", key), "unknown runtime key (default_version, versions)")
    versions = c.mapping(obj.get("versions"), "runtime.versions")
    default = c.string(obj, "default_version", "runtime", required=True)
    if versions is None:
        return
    if not versions:
        c.bad("runtime.versions", "must declare at least one variant")
    elif default is not None and default not in versions:
        c.bad("runtime.default_version", f"{default!r} is not a key of runtime.versions")
    seen_ids: dict[str, str] = {}
    for version, body in versions.items():
        if not isinstance(version, str):
            continue  # reported by the string-key rule
        _check_variant(c, version, body, framework, seen_ids)


def _check_variant(c: Checker, version: str, body: Any, framework: str | None, seen_ids: dict[str, str]) -> None:
    field = f"runtime.versions.{version}"
    first_class = framework != "custom"
    if first_class and not _VERSION_KEY.fullmatch(version):
        c.bad(field, f"{version!r} must be an exact release (1.2.3) or a full 40-hex commit, not a range or branch")
    obj = c.mapping(body if body is not None else {}, field)
    if obj is None:
        return
    for key in obj:
        if key == "image":
            c.bad(join(field, "image"), "is forbidden: images are bound through runtime_id by the deployment")
        elif key not in _VARIANT_KEYS:
            c.bad(join(field, key), "unknown variant key")
    runtime_id = c.segment(obj, "runtime_id", field, required=first_class)
    if runtime_id:
        if runtime_id in seen_ids:
            c.bad(join(field, "runtime_id"), f"{runtime_id!r} is already used by variant {seen_ids[runtime_id]}")
        seen_ids[runtime_id] = version
    requires = c.strings(obj, "requires", field)
    from packaging.requirements import (  # slow import, needed on a cache miss only
        InvalidRequirement,
        Requirement,
    )

    for i, item in enumerate(requires or ()):
        try:
            Requirement(item)
        except InvalidRequirement:
            c.bad(join(join(field, "requires"), i), f"{item!r} is not a PEP 508 requirement")
    deployment = c.boolean(obj, "deployment_artifact", field)
    kind = check_artifact(c, obj["source"], join(field, "source")) if obj.get("source") is not None else None
    has_source = obj.get("source") is not None
    if deployment and has_source:
        c.bad(join(field, "source"), "is forbidden with deployment_artifact: true")
    elif first_class and not deployment:
        if not has_source:
            c.bad(field, "needs deployment_artifact: true or a source of kind oci")
        elif kind is not None and kind != "oci":
            c.bad(join(field, "source.kind"), "must be oci (or set deployment_artifact: true without a source)")
    package = _PINNED.get(framework or "")
    if package and SAFE_SEGMENT.fullmatch(version) and f"{package}=={version}" not in (requires or []):
        c.bad(join(field, "requires"), f"must list the exact pin {package}=={version}")
    if obj.get("entrypoint") is not None:
        check_entrypoint(c, obj["entrypoint"], join(field, "entrypoint"))
    c.enum(obj, "status", field, ("supported", "deprecated"))
    _check_sunset(c, obj.get("sunset"), join(field, "sunset"))


def _check_sunset(c: Checker, value: Any, field: str) -> None:
    if value is None or isinstance(value, _dt.date):
        return
    if not isinstance(value, str):
        c.bad(field, "must be an ISO date such as 2026-06-30")
        return
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        c.bad(field, f"{value!r} is not an ISO date such as 2026-06-30")

