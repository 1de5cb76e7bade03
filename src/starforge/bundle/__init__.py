"""The job bundle: which files go in, deterministic tar.gz writing, digests, and safe unpacking (stdlib only)."""

from ._digest import directory_digest
from ._extract import extract_bundle
from ._hash import bundle_sha256
from ._limits import BundleLimits
from ._problems import UnsafeBundle
from ._scan import inspect_bundle
from ._secrets import SECRET_PATTERNS, is_secret_name
from ._select import GitListingError, Selection, select_files
from ._write import BundleFile, BundleInfo, needs_lf, pack_bytes, write_bundle

__all__ = [
    "SECRET_PATTERNS",
    "BundleFile",
    "BundleInfo",
    "BundleLimits",
    "GitListingError",
    "Selection",
    "UnsafeBundle",
    "bundle_sha256",
    "directory_digest",
    "extract_bundle",
    "inspect_bundle",
    "is_secret_name",
    "needs_lf",
    "pack_bytes",
    "select_files",
    "write_bundle",
]
