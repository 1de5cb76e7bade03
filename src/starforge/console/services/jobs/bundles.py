"""Content-addressed bundle storage under the state directory: `bundles/<aa>/<sha256>.tar.gz`.

Tier: query (a file store: no database, no transaction; its writes are atomic renames).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

__all__ = ["bundle_path", "store_bundle"]


def bundle_path(state_dir: Path, sha: str) -> Path:
    """Return where the bundle with digest `sha256:<hex>` (or bare hex) is stored."""
    hexdigest = sha.split(":", 1)[-1]
    return state_dir / "bundles" / hexdigest[:2] / f"{hexdigest}.tar.gz"


def store_bundle(state_dir: Path, data: bytes) -> str:
    """Store `data` once (atomic write) and return its digest `sha256:<hex>`."""
    sha = "sha256:" + hashlib.sha256(data).hexdigest()
    target = bundle_path(state_dir, sha)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return sha
