"""The job bundle: which files go in, deterministic tar.gz writing, digests, and safe unpacking (stdlib only)."""

from ._digest import digest_files, directory_digest
from ._extract import extract_bundle
from ._hash import bundle_sha256
from ._limits import BundleLimits
from ._problems import UnsafeBundle
from ._scan import inspect_bundle
from ._secrets import (
    MAX_SCAN_BYTES,
    SECRET_PATTERNS,
    SecretFinding,
    find_secret,
    is_secret_name,
    scan_content,
)
from ._select import GitListingError, Selection, select_files
from ._write import BundleFile, BundleInfo, needs_lf, pack_bytes, write_bundle

__all__ = [
    "MAX_SCAN_BYTES",
    "SECRET_PATTERNS",
    "BundleFile",
    "BundleInfo",
    "BundleLimits",
    "GitListingError",
    "SecretFinding",
    "Selection",
    "UnsafeBundle",
    "bundle_sha256",
    "digest_files",
    "directory_digest",
    "extract_bundle",
    "find_secret",
    "inspect_bundle",
    "is_secret_name",
    "needs_lf",
    "pack_bytes",
    "scan_content",
    "select_files",
    "write_bundle",
]
