"""The artifact kinds a job registers (`POST /api/ingest/artifact`) and the launch plan's glob group of each."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = [
    "ARTIFACT_GROUPS",
    "ARTIFACT_KINDS",
    "KIND_CHECKPOINT",
    "KIND_EVAL_REPORT",
    "KIND_HF_EXPORT",
    "KIND_LOG",
    "KIND_MERGED_MODEL",
    "KIND_MODEL",
    "RUN_MODEL_KINDS",
]

KIND_CHECKPOINT: Final = "checkpoint"
KIND_LOG: Final = "log"
KIND_HF_EXPORT: Final = "hf_export"
KIND_EVAL_REPORT: Final = "eval_report"
KIND_MERGED_MODEL: Final = "merged_model"
KIND_MODEL: Final = "model"  # the final trained model a trainer saved (a Hugging Face folder for the trl recipes)
# what `run:<run_id>` names as a model (a service, a benchmark job): the first of these kinds the run registered
RUN_MODEL_KINDS: Final = (KIND_HF_EXPORT, KIND_MERGED_MODEL, KIND_MODEL, KIND_CHECKPOINT)
ARTIFACT_KINDS: Final = (KIND_CHECKPOINT, KIND_LOG, KIND_HF_EXPORT, KIND_EVAL_REPORT, KIND_MERGED_MODEL, KIND_MODEL)

# launch plan `artifacts.<group>` -> the kind its matches are registered as, in the plan's key order
ARTIFACT_GROUPS: Mapping[str, str] = MappingProxyType(
    {
        "checkpoints": KIND_CHECKPOINT,
        "logs": KIND_LOG,
        "exports": KIND_HF_EXPORT,
        "evaluations": KIND_EVAL_REPORT,
    }
)
