"""The opening checks every engine's configuration block shares: a mapping, with only the keys its reader knows.

Each reader (`executors.slurm`, `executors.ray`, `kuberay`, `runtimes`) then checks its own values; a refusal is a
ValueError whose text starts with the key's dotted path (the settings module turns it into a SettingsError).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["known_block", "slot_counts"]


def known_block(raw: Any, path: str, known: Sequence[str]) -> dict[Any, Any]:
    """Return `raw` when it is a mapping whose keys are all in `known`; raise ValueError at `path` otherwise.

    The refusals read `<path>: must be a mapping of <known>` and `<path>: unknown keys <sorted> (known: <known>)`.
    """
    listed = ", ".join(known)
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: must be a mapping of {listed}")
    unknown = set(raw) - set(known)
    if unknown:
        raise ValueError(f"{path}: unknown keys {', '.join(sorted(map(str, unknown)))} (known: {listed})")
    return raw


def slot_counts(raw: Any, path: str) -> dict[str, int]:
    """Return `raw` read as slots per series (`{h200: 16}`: whole numbers ≥ 0); raise ValueError at `path` otherwise."""
    if not isinstance(raw, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                            for v in raw.values()):
        raise ValueError(f"{path}: must map series to whole numbers of slots, e.g. {{h200: 16}}")
    return {str(k): v for k, v in raw.items()}
