"""PLACEHOLDER of bench1's module (DESIGN-I5.md): the benchmark suites this console offers; replaced on merge.

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from ....contract import Problem
from ..errors import Rejected

__all__ = ["Suite", "available_suites", "resolve_suites"]


@dataclass(frozen=True)
class Suite:
    """One benchmark suite of a pack."""

    name: str
    pack: str
    pack_version: str
    digest: str
    metrics: tuple[str, ...]
    description: str
    builtin: bool


_BUILTIN = (
    Suite("basic-arithmetic", "starforge/basic", "1.0.0", "", ("exact_match",), "single-digit sums", True),
    Suite("basic-choice", "starforge/basic", "1.0.0", "", ("acc",), "a tiny multiple-choice set", True),
)


def available_suites(db: Session) -> list[Suite]:
    """Return every suite this console offers."""
    return list(_BUILTIN)


def resolve_suites(db: Session, names: Sequence[str], *, field: str) -> list[Suite]:
    """Return the suites `names` name; raise Rejected at `field` for an unknown one."""
    offered = {s.name: s for s in available_suites(db)}
    unknown = [n for n in names if n not in offered]
    if unknown:
        raise Rejected("Unknown benchmark suite", [Problem(field, "suite_unknown", f"no suite {unknown[0]!r}",
                                                           f"offered: {', '.join(sorted(offered))}")])
    return [offered[n] for n in names]
