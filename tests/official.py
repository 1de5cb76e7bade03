"""The official sf client's recipe catalog, read as data at test time (never copied into the repository).

`official_catalog(v)` downloads the `starforge-core==<v>` wheel with pip into `official/<v>/` of the user's test
cache (`cache_dir()`: `$XDG_CACHE_HOME/starforge-tests`, else `~/.cache/starforge-tests`, outside every clone, so a
fresh clone reuses it) and unpacks only `starforge/recipes/catalog/**`; later calls reuse it. A file lock lets
parallel test workers share one download.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

__all__ = ["CACHE", "OfficialUnavailable", "cache_dir", "official_catalog"]


def cache_dir() -> Path:
    """Return the folder the test suites cache downloads and installs in, shared by every clone of this user."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "starforge-tests"


CACHE = cache_dir() / "official"
_PREFIX = "starforge/recipes/catalog/"


class OfficialUnavailable(RuntimeError):
    """The official wheel could not be downloaded (no network or no such version)."""


def _download(version: str, target: Path) -> Path:
    wheels = sorted(target.glob(f"starforge_core-{version}-*.whl"))
    if wheels:
        return wheels[0]
    target.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
               "--disable-pip-version-check", "--quiet", f"starforge-core=={version}", "-d", str(target)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    wheels = sorted(target.glob(f"starforge_core-{version}-*.whl"))
    if done.returncode != 0 or not wheels:
        raise OfficialUnavailable(f"pip download starforge-core=={version} failed: {done.stderr.strip()[-500:]}")
    return wheels[0]


def official_catalog(version: str = "0.3.56") -> Path:
    """Return the directory of the official `<framework>/<name>/recipe.yaml` tree of starforge-core `version`."""
    base = CACHE / version
    catalog = base / "starforge" / "recipes" / "catalog"
    if (base / ".unpacked").is_file() and catalog.is_dir():
        return catalog
    base.mkdir(parents=True, exist_ok=True)
    with (CACHE / f"{version}.lock").open("w") as lock:  # parallel test workers unpack it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (base / ".unpacked").is_file() and catalog.is_dir():
            return catalog
        return _unpack(version, base, catalog)


def _unpack(version: str, base: Path, catalog: Path) -> Path:
    wheel = _download(version, base)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=base))
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.startswith(_PREFIX) and not m.endswith("/")]
            for member in members:
                archive.extract(member, staging)
        if catalog.exists():
            shutil.rmtree(base / "starforge")
        os.replace(staging / "starforge", base / "starforge")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    (base / ".unpacked").write_text(wheel.name + "\n", encoding="utf-8")
    return catalog
