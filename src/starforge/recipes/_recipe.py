"""`Recipe`: one loaded recipe; its summary is always at hand, the full manifest is parsed on first use."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from ._cache import Entry, TreeCache
from ._digests import bundle_digest
from ._model import Entrypoint, Param, Runtime

__all__ = ["Recipe"]


class Recipe:
    """A recipe of a catalog: identity and runtime from the validated summary; params and the rest parsed lazily."""

    def __init__(self, *, directory: Path, manifest_file: Path, entry: Entry, cache: TreeCache, scheme: str,
                 origin: str) -> None:
        head = entry.head
        self.directory = directory
        self.manifest_file = manifest_file
        self.name: str = head["name"]
        self.framework: str = head["framework"]
        self.id = f"{self.framework}/{self.name}"
        self.version: str = head["version"]
        self.title: str = head["title"]
        self.summary: str = head["summary"]
        self.category: str = head["category"]
        self.requires_core: str = head["requires_core"]
        self.hyperparam_keys: str = head["hyperparam_keys"]
        self.template_dir = directory / head["template"]
        self.manifest_digest = entry.manifest_digest
        self.scheme = scheme
        self.origin = origin  # "catalog" (the loaded tree) or "overlay"
        self._runtime_data = head["runtime"]
        self._cache = cache
        self._template_digest: str | None = None
        self._digests: dict[str, str] = {}  # bundle digest per scheme

    def __repr__(self) -> str:
        return f"Recipe({self.id}@{self.version})"

    # identity and digests
    @cached_property
    def runtime(self) -> Runtime:
        """Return the runtime section: default version and variants in manifest order."""
        return Runtime.from_dict(self._runtime_data)

    @property
    def framework_versions(self) -> list[str]:
        """Return the supported framework versions (the `runtime.versions` keys, in manifest order)."""
        return list(self.runtime.versions)

    @property
    def default_version(self) -> str:
        """Return `runtime.default_version`."""
        return self.runtime.default_version

    def runtime_id(self, framework_version: str) -> str:
        """Return the variant's runtime id for `framework_version` ("" when it has none or is unknown)."""
        variant = self.runtime.versions.get(framework_version)
        return variant.runtime_id if variant else ""

    @property
    def template_digest(self) -> str:
        """Return the template directory digest (§5.2), cached by the stats of the template's files."""
        return self.compute_template_digest(flush=True)

    def compute_template_digest(self, *, flush: bool) -> str:
        """Return the template digest; `flush=False` leaves writing the cache to the caller (`flush_cache`)."""
        if self._template_digest is None:
            self._template_digest = self._cache.template_digest(self.template_dir)
            if flush:
                self._cache.flush()
        return self._template_digest

    def flush_cache(self) -> None:
        """Write the digest cache of the recipe's tree back (best effort)."""
        self._cache.flush()

    def digest(self, scheme: str | None = None) -> str:
        """Return the bundle digest under `scheme` (default: the scheme of the catalog that loaded the recipe)."""
        scheme = scheme or self.scheme
        found = self._digests.get(scheme)
        if found is None:  # asked on every admission: computed once per scheme
            template = self.template_digest if scheme == "manifest+template" else None
            found = self._digests[scheme] = bundle_digest(self.manifest_digest, template, scheme)
        return found

    # the full manifest (parsed on first use)
    @cached_property
    def manifest(self) -> dict[str, Any]:
        """Return the manifest as loaded (PyYAML safe-load types); treat it as read-only."""
        return self._cache.load_body(self.manifest_file, self.manifest_digest)

    @cached_property
    def params(self) -> dict[str, Param]:
        """Return the parameter declarations in declaration order."""
        return {name: Param.from_dict(name, decl or {}) for name, decl in (self.manifest.get("params") or {}).items()}

    @cached_property
    def entrypoint(self) -> Entrypoint:
        """Return the recipe's entrypoint."""
        return Entrypoint.from_dict(self.manifest["entrypoint"])

    def entrypoint_for(self, framework_version: str | None) -> Entrypoint:
        """Return the entrypoint of `framework_version`: the variant's override, else the recipe's."""
        variant = self.runtime.versions.get(framework_version or "")
        return variant.entrypoint if variant and variant.entrypoint else self.entrypoint

    @property
    def roles(self) -> list[str]:
        """Return the declared roles (first = the primary pool's role)."""
        return list(self.manifest.get("roles") or [])

    @property
    def plugins(self) -> list[str]:
        """Return the built-in algorithm patch names copied into `spec.recipe.plugins`."""
        return list(self.manifest.get("plugins") or [])

    @property
    def lifecycle(self) -> dict[str, Entrypoint]:
        """Return the lifecycle actions and their entrypoints."""
        return {k: Entrypoint.from_dict(v) for k, v in (self.manifest.get("lifecycle") or {}).items()}

    @property
    def lifecycle_resources(self) -> dict[str, int]:
        """Return the GPUs of each lifecycle action's single pool."""
        return dict(self.manifest.get("lifecycle_resources") or {})

    @property
    def adapter_options(self) -> dict[str, Any]:
        """Return `adapter_options` as loaded."""
        return dict(self.manifest.get("adapter_options") or {})

    @property
    def observability(self) -> str:
        """Return `platform` or `external`."""
        return str(self.adapter_options.get("observability") or "")

    @property
    def artifacts(self) -> dict[str, Any]:
        """Return the `artifacts` section as loaded."""
        return dict(self.manifest.get("artifacts") or {})

    @property
    def metrics(self) -> dict[str, Any]:
        """Return the `metrics` section as loaded."""
        return dict(self.manifest.get("metrics") or {})

    @property
    def contract_version(self) -> str:
        """Return the recipe's own contract semver (default 1.0.0)."""
        return str(self.manifest.get("contract_version") or "1.0.0")
