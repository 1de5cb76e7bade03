"""Benchmark packs: read and validate a pack folder (`plugin.yaml` of kind `benchmark`, lm-eval task YAMLs, local
data), and find the builtin pack `starforge/basic` shipped in the package.

    from starforge.benchmarks import read_pack, builtin_pack

    pack = read_pack(folder)          # raises PackRefused(problems)
    pack.suite("basic-arithmetic")    # SuiteSpec(name, task, metrics, description)
"""

from __future__ import annotations

from pathlib import Path

from ._pack import KIND, LOCAL_BUILDERS, MANIFEST, Pack, PackRefused, SuiteSpec, read_pack

__all__ = [
    "BUILTIN_OWNER",
    "BUILTIN_ROOT",
    "KIND",
    "LOCAL_BUILDERS",
    "MANIFEST",
    "Pack",
    "PackRefused",
    "SuiteSpec",
    "builtin_pack",
    "read_pack",
]

BUILTIN_OWNER = "starforge"
BUILTIN_ROOT = Path(__file__).resolve().parent / "builtin" / "basic"


def builtin_pack() -> Pack:
    """Return the builtin pack `starforge/basic` (its folder inside the installed package)."""
    return read_pack(BUILTIN_ROOT)
