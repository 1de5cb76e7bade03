"""The job bundle: which files go in, deterministic tar.gz writing, digests, and safe unpacking (stdlib only)."""

from ._digest import directory_digest

__all__ = ["directory_digest"]
