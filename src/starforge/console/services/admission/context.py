"""The frozen admission context every policy check reads: the admitted spec, the account, settings, resolutions.

Tier: shared (values; no database).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ....contract import JobSpec, Problem
from ...settings import Settings
from ..accounts.credentials import UserView
from ..quota.caps import QuotaView
from ..quota.policy import Ledger
from ..registries.artifacts import ArtifactView
from ..registries.benchmark_packs import Suite
from ..registries.data import AssetView
from ..registries.plugins import PluginView

__all__ = ["AdmissionContext", "Resolutions"]


@dataclass(frozen=True)
class Resolutions:
    """What the registries answered for the spec's references (None/absent = unknown or not readable)."""

    init_from: ArtifactView | None = None
    assets: dict[str, AssetView | None] = field(default_factory=dict)  # field path -> asset
    taken_outputs: frozenset[str] = frozenset()  # output dataset refs whose version already exists
    plugins: tuple[PluginView | None, ...] = ()
    benchmarks: tuple[Suite, ...] = ()  # the suites of a benchmark job (`checks.benchmarks`), in the order asked
    benchmark_problems: tuple[Problem, ...] = ()  # why its suites were refused (`benchmark_packs.resolve_suites`)


@dataclass(frozen=True)
class AdmissionContext:
    """Everything a policy check may look at; checks never touch the database."""

    spec: JobSpec
    user: UserView
    settings: Settings
    profile: str
    quota: QuotaView
    ledger: Ledger | None  # the account's day against its daily budget; None without one (or for a follow-up)
    resolutions: Resolutions
    bundle: bytes | None = None
    recipe: Any = None
    capacity: Mapping[str, int] = field(default_factory=dict)  # slots per series in this deployment (engines' view)
    allow_pending: bool = False  # the submitter lets a job no capacity can serve wait (`--allow-pending`)
