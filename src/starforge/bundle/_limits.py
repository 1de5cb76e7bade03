"""Bundle limits: the frozen set of numbers an unpacker enforces on a hostile bundle."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["RATIO_FLOOR_BYTES", "BundleLimits"]

MiB = 1024 * 1024
GiB = 1024 * MiB

# The expansion ratio is only judged once this many bytes came out of the gzip stream: small bundles of
# repetitive text compress very well and are no threat.
RATIO_FLOOR_BYTES = 10 * MiB


@dataclass(frozen=True, slots=True)
class BundleLimits:
    """What a bundle may weigh: compressed bytes, members, bytes per file and in total, expansion, path length.

    Example: `BundleLimits(max_files=500, max_ratio=50.0)` keeps every other default.
    """

    max_bytes: int = 512 * MiB
    max_files: int = 20_000
    max_file_bytes: int = 2 * GiB
    max_total_bytes: int = 4 * GiB
    max_ratio: float = 200.0
    max_path_len: int = 1024

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not value > 0:
                raise ValueError(f"BundleLimits.{item.name} must be a positive number, got {value!r}")
