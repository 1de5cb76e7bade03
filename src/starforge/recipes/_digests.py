"""Digests of recipes-and-locks §5 and wire-protocol §6.2: manifest, bundle (two schemes) and catalog digests."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

__all__ = [
    "SCHEMES",
    "YAMLError",
    "bundle_digest",
    "canonical_json",
    "catalog_digest",
    "load_yaml",
    "manifest_digest",
    "manifest_digest_of_text",
]

SCHEMES = ("manifest", "manifest+template")

# libyaml's parser with PyYAML's own safe constructor and resolver: the same YAML 1.1 typing, several times faster.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAMLError = yaml.YAMLError  # what `load_yaml` raises, named here so its callers need not import yaml


def load_yaml(text: str) -> Any:
    """Load YAML text with PyYAML safe-load (YAML 1.1) typing; an empty document is `{}`. Raises yaml.YAMLError."""
    value = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader
    return {} if value is None else value


def _iso(value: Any) -> Any:
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def canonical_json(value: Any) -> str:
    """Return the canonical JSON text: sorted keys, no whitespace, non-ASCII kept, shortest round-trip floats."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_iso)


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def manifest_digest(manifest: Any) -> str:
    """Return the manifest digest of an already loaded manifest (SHA-256 of its canonical JSON)."""
    return _sha(canonical_json(manifest))


def manifest_digest_of_text(text: str) -> str:
    """Return the manifest digest of `recipe.yaml` text (§5.1): PyYAML safe load, canonical JSON, SHA-256."""
    return manifest_digest(load_yaml(text))


def bundle_digest(manifest: str, template: str | None, scheme: str = "manifest") -> str:
    """Return the bundle digest (§5.3) under `scheme`: `manifest` or `manifest+template`."""
    if scheme == "manifest":
        return _sha(canonical_json({"manifest": manifest}))
    if scheme == "manifest+template":
        if template is None:
            raise ValueError("the manifest+template scheme needs the template digest")
        return _sha(canonical_json({"manifest": manifest, "template": template}))
    raise ValueError(f"unknown digest scheme {scheme!r} (use one of {', '.join(SCHEMES)})")


def catalog_digest(recipes: Iterable[Mapping[str, Any]]) -> str:
    """Return `catalog_digest` (wire §6.2) over the entries in order: `{name, version, digest}`, ASCII-escaped JSON."""
    rows = [{"name": r.get("name"), "version": r.get("version"), "digest": r.get("digest")} for r in recipes]
    return "sha256:" + hashlib.sha256(
        json.dumps(rows, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("utf-8")
    ).hexdigest()
