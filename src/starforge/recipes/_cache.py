"""Validation results and digests of recipe trees, cached in memory and under `$FORGE_HOME/cache/recipes`.

A manifest is keyed by its path, size and mtime (plus the validator's own files), so an unchanged tree loads without
parsing YAML; a manifest body is stored by its digest, and a template digest by the stats of the template's files.
Entries younger than two seconds are never stored (an edit within the same mtime tick would go unnoticed).
What is kept in memory belongs to a `RecipeMemo` the caller owns (the console keeps one in its runtime; each
`load_catalog` call without one makes its own), never to this module.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from starforge import __version__

from ._digests import load_yaml, manifest_digest
from ._env import cache_dir
from ._errors import CatalogError, ManifestProblem
from ._model import DEFAULT_CORE_REQUIREMENT

__all__ = ["Entry", "RecipeMemo", "TreeCache"]

_FORMAT = 1
_RACY_SECONDS = 2.0
_VALIDATOR_FILES = ("_manifest.py", "_manifest_params.py", "_manifest_runtime.py", "_checker.py", "_values.py",
                    "_model.py", "_cache.py")


@dataclass(frozen=True, slots=True)
class Entry:
    """What loading needs from one manifest: validity, problems, the summary (`head`) and the manifest digest."""

    ok: bool
    problems: tuple[tuple[str, str], ...]
    head: dict[str, Any]
    manifest_digest: str


class RecipeMemo:
    """What loaded recipe trees keep in memory: validation entries by file stats, manifest bodies by digest, template
    digests by file stamps. Owned by its caller (the console's runtime), shared by every tree it loads."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, int, int, str], Entry] = {}
        self.bodies: dict[str, dict[str, Any]] = {}
        self.templates: dict[tuple[str, str], str] = {}


def _fingerprint() -> str:
    here = Path(__file__).resolve().parent
    parts = [str(_FORMAT), __version__, yaml.__version__]
    for name in _VALIDATOR_FILES:
        with contextlib.suppress(OSError):
            st = (here / name).stat()
            parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:20]


def _head(data: dict[str, Any]) -> dict[str, Any]:
    requires = data.get("requires") or {}
    return {
        "name": data["name"],
        "framework": data["framework"],
        "version": data["version"],
        "title": data.get("title") or "",
        "summary": data.get("summary") or "",
        "category": data.get("category") or "",
        "template": data["template"],
        "requires_core": (requires.get("core") or DEFAULT_CORE_REQUIREMENT).strip(),
        "hyperparam_keys": data.get("hyperparam_keys") or "names",
        "runtime": json.loads(json.dumps(data["runtime"], default=str)),
    }


def _store_body(directory: Path, digest: str, data: dict[str, Any]) -> None:
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return  # dates (or anything without an exact JSON form) are re-read from the YAML
    _atomic_write(directory / "bodies" / f"{digest[7:]}.json", text)


def _atomic_write(path: Path, text: str) -> None:
    with contextlib.suppress(OSError):
        _private_dirs(path.parent)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)


def _private_dirs(path: Path) -> None:
    """Create `path` and its missing parents with mode 0700 (client state is private)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for item in reversed(missing):
        item.mkdir(mode=0o700, exist_ok=True)


class TreeCache:
    """The cache of one recipe tree (a root and its layout); `flush` writes it back when something was computed."""

    def __init__(self, root: Path, layout: str, memo: RecipeMemo) -> None:
        self.root = root
        self.layout = layout
        self.memo = memo
        self.directory = cache_dir()
        key = hashlib.sha256(f"{layout}:{root}".encode()).hexdigest()[:16]
        self.path = self.directory / f"index-{key}.json"
        self.fingerprint = _fingerprint()
        self.dirty = False
        self.data: dict[str, Any] = {"format": self.fingerprint, "root": str(root), "manifests": {}, "templates": {}}
        with contextlib.suppress(OSError, ValueError):
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict) and loaded.get("format") == self.fingerprint:
                self.data = loaded

    def entry(self, file: Path, *, directory: str, framework_dir: str | None, owner: str | None) -> Entry:
        """Return the validation entry of the manifest `file` (cached when the file is unchanged)."""
        st = file.stat()
        context = f"{self.layout}:{framework_dir or ''}:{owner or ''}:{directory}"
        memo_key = (str(file), st.st_size, st.st_mtime_ns, context + self.fingerprint)
        cached = self.memo.entries.get(memo_key)
        if cached is not None:
            return cached
        rel = file.relative_to(self.root).as_posix()
        stored = self.data["manifests"].get(rel)
        if (
            isinstance(stored, dict)
            and stored.get("size") == st.st_size
            and stored.get("mtime_ns") == st.st_mtime_ns
            and stored.get("context") == context
        ):
            entry = Entry(bool(stored["ok"]), tuple(tuple(p) for p in stored["problems"]), stored["head"],
                          stored["digest"])
            self.memo.entries[memo_key] = entry
            return entry
        entry = self._compute(file, directory=directory, framework_dir=framework_dir, owner=owner)
        if time.time() - st.st_mtime_ns / 1e9 > _RACY_SECONDS:
            self.memo.entries[memo_key] = entry
            self.data["manifests"][rel] = {
                "size": st.st_size, "mtime_ns": st.st_mtime_ns, "context": context, "ok": entry.ok,
                "problems": [list(p) for p in entry.problems], "head": entry.head, "digest": entry.manifest_digest,
            }
            self.dirty = True
        return entry

    def _compute(self, file: Path, *, directory: str, framework_dir: str | None, owner: str | None) -> Entry:
        try:
            data = load_yaml(file.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            return Entry(False, (("<root>", f"not UTF-8 text: {exc}"),), {}, "")
        except yaml.YAMLError as exc:
            return Entry(False, (("<root>", f"not valid YAML: {' '.join(str(exc).split())}"),), {}, "")
        from ._manifest import validate_manifest  # only on a cache miss

        problems = validate_manifest(data, directory=directory, framework_dir=framework_dir, owner=owner)
        if problems:
            return Entry(False, tuple(problems), {}, "")
        digest = manifest_digest(data)
        self.memo.bodies[digest] = data
        _store_body(self.directory, digest, data)
        return Entry(True, (), _head(data), digest)

    def template_digest(self, template: Path) -> str:
        """Return the directory digest of `template`, reusing the stored value while no file changed."""
        stamp = _stamp(template)
        memo = self.memo.templates.get((str(template), stamp or ""))
        if memo is not None and stamp is not None:
            return memo
        try:
            rel = template.relative_to(self.root).as_posix()
        except ValueError:
            rel = str(template)
        stored = self.data["templates"].get(rel)
        if stamp is not None and isinstance(stored, dict) and stored.get("stamp") == stamp:
            self.memo.templates[(str(template), stamp)] = stored["digest"]
            return str(stored["digest"])
        from starforge.bundle import directory_digest

        digest = directory_digest(template)
        if stamp is not None:
            self.memo.templates[(str(template), stamp)] = digest
            self.data["templates"][rel] = {"stamp": stamp, "digest": digest}
            self.dirty = True
        return digest

    def load_body(self, file: Path, digest: str) -> dict[str, Any]:
        """Return the manifest of `file` as loaded (from memory, the body cache by digest, else its YAML)."""
        body = self.memo.bodies.get(digest)
        if body is not None:
            return body
        with contextlib.suppress(OSError, ValueError):
            text = (self.directory / "bodies" / f"{digest[7:]}.json").read_text(encoding="utf-8")
            body = json.loads(text)
            if isinstance(body, dict) and manifest_digest(body) == digest:
                self.memo.bodies[digest] = body
                return body
        data = load_yaml(file.read_text(encoding="utf-8"))
        if manifest_digest(data) != digest:
            raise CatalogError([ManifestProblem(str(file), "<root>",
                                                "changed since the catalog was loaded; reload it")])
        self.memo.bodies[digest] = data
        return data  # type: ignore[no-any-return]

    def flush(self) -> None:
        """Write the cache back (atomically, best effort) when an entry was computed since it was read."""
        if self.dirty:
            self.dirty = False
            _atomic_write(self.path, json.dumps(self.data, ensure_ascii=False, separators=(",", ":")))


def _stamp(template: Path) -> str | None:
    """Return a fingerprint of every file's path, size and mtime under `template`; None when one is too recent."""
    rows: list[str] = []
    now = time.time()
    for current, _dirs, names in os.walk(template):
        for name in names:
            path = Path(current, name)
            try:
                st = path.stat()
            except OSError:
                continue
            if now - st.st_mtime_ns / 1e9 <= _RACY_SECONDS:
                return None
            rows.append(f"{path.relative_to(template).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}")
    rows.sort()
    return hashlib.sha256("\n".join(rows).encode("utf-8", "surrogateescape")).hexdigest()
