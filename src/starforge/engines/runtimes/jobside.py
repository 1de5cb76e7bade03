"""The copy of the `starforge` package that jobs on a built runtime import (`forge-launch`, recipe modules).

A runtime's venv holds only the recipe's requirements; StarForge's job side (runner, contract, bundle and wire are
standard library only; `starforge.tinyrl`, `starforge.trainers` and the rest come along) is copied once per
content digest to `<cache>/starforge/<digest>/starforge`, compiled, and put on the job's PYTHONPATH. Upgrading
StarForge makes a new copy; no runtime is rebuilt for it, and a running job's copy never changes under it.
"""

from __future__ import annotations

import compileall
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import starforge

from .locking import file_lock

__all__ = ["jobside_copy", "package_digest"]

_SKIP = ("__pycache__",)


def _files(package: Path) -> list[Path]:
    out: list[Path] = []
    for current, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP)
        out.extend(Path(current, name) for name in sorted(files) if not name.endswith((".pyc", ".pyo")))
    return out


def package_digest(package: Path | None = None) -> str:
    """Return 16 hex characters of the package's file names and contents."""
    root = package or Path(starforge.__file__).parent
    digest = hashlib.sha256()
    for path in _files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def jobside_copy(cache_dir: Path, package: Path | None = None) -> Path:
    """Return the folder to put on a job's PYTHONPATH: it holds an up-to-date, compiled copy of `starforge`."""
    root = package or Path(starforge.__file__).parent
    home = cache_dir / "starforge"
    target = home / package_digest(root)
    if (target / "starforge" / "__init__.py").is_file():
        return target
    home.mkdir(parents=True, exist_ok=True)
    with file_lock(home / ".lock"):
        if (target / "starforge" / "__init__.py").is_file():
            return target
        staging = Path(tempfile.mkdtemp(prefix=".copy-", dir=home))
        try:
            shutil.copytree(root, staging / "starforge", ignore=shutil.ignore_patterns(*_SKIP, "*.pyc"))
            compileall.compile_dir(staging / "starforge", quiet=2, workers=1)
            for current, dirs, files in os.walk(staging):
                for name in dirs:
                    os.chmod(os.path.join(current, name), 0o755)
                for name in files:
                    os.chmod(os.path.join(current, name), 0o644)
            staging.chmod(0o755)
            os.replace(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target
