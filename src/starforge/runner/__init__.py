"""The job side: `forge-launch`, the `report` metrics SDK and the ingest client (stdlib + contract + wire only).

The launch plan, the config modes, the ingest vocabulary and the recipe identity live in `starforge.wire`; the
names re-exported here are the same objects, kept for the runner's existing users.
"""

from starforge.wire import (
    CONFIG_MODES,
    IDENTITY_VARIABLES,
    PLAN_VERSION,
    ArtifactGlobs,
    ConfigPlan,
    Entrypoint,
    LaunchPlan,
    Override,
    PlanFramework,
    PlanRecipe,
    parse_plan,
    read_plan,
)

from . import report
from ._argv import build_argv, build_command, render_value
from ._artifacts import FoundArtifact, scan, size_of, step_of
from ._config import Adapted, adapt_config, merged_document
from ._identity import Mismatch, check_identity
from ._ingest import IngestClient, IngestError, IngestRefused, IngestUnavailable
from .report import Run

__all__ = [
    "CONFIG_MODES",
    "Adapted",
    "IDENTITY_VARIABLES",
    "PLAN_VERSION",
    "ArtifactGlobs",
    "ConfigPlan",
    "Entrypoint",
    "FoundArtifact",
    "IngestClient",
    "IngestError",
    "IngestRefused",
    "IngestUnavailable",
    "LaunchPlan",
    "Mismatch",
    "Override",
    "PlanFramework",
    "PlanRecipe",
    "Run",
    "adapt_config",
    "build_argv",
    "build_command",
    "check_identity",
    "merged_document",
    "parse_plan",
    "read_plan",
    "render_value",
    "report",
    "scan",
    "size_of",
    "step_of",
]
