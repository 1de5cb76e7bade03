"""Secret-looking file names: the base names a client refuses to upload (wire-protocol §7.2)."""

from __future__ import annotations

import posixpath
from fnmatch import fnmatchcase

__all__ = ["SECRET_PATTERNS", "is_secret_name"]

SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    ".envrc",
    ".netrc",
    "credentials.json",
    "*_credentials.json",
    "token.txt",
    "api_key.txt",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    "id_dsa*",
    "secrets.*",
    "*.secret",
    "hf_token*",
)


def is_secret_name(name: str) -> bool:
    """Return True when the base name of `name` looks like a secret; case is ignored to err on the safe side."""
    base = posixpath.basename(name.replace("\\", "/")).lower()
    return any(fnmatchcase(base, pattern) for pattern in SECRET_PATTERNS)
