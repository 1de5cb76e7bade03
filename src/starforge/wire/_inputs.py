"""Job inputs a recipe binds to framework config paths (`adapter_options.bindings`) and where each is read.

A binding `{model: actor_rollout_ref.model.path}` means: when the job's environment names a model (`FORGE_MODEL`),
`forge-launch` sets that config path to it, after the experiment's config and the hyperparameters. A job started
from a checkpoint (`--init-from`, `FORGE_INIT_FROM`) has that checkpoint as its model: the base model is where the
checkpoint came from, and a trainer's checkpoint folder holds the weights, config and tokenizer to load.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["INPUTS", "INPUT_SPLITS", "InputSource", "input_value"]


@dataclass(frozen=True, slots=True)
class InputSource:
    """Where a job input comes from: an environment variable, plus a suffix appended to its value.

    `first` names a variable read before `variable` (taken as it is, without the suffix) when it is set.
    """

    variable: str
    suffix: str = ""
    first: str = ""


INPUTS: Mapping[str, InputSource] = MappingProxyType(
    {
        "model": InputSource("FORGE_MODEL", first="FORGE_INIT_FROM"),  # a checkpoint, a model folder or a hub id
        "train_data": InputSource("FORGE_TRAIN_DATA"),  # a job-side file or folder
        "validation_data": InputSource("FORGE_VAL_DATA"),
        "output_dir": InputSource("FORGE_OUT_DIR"),
        "checkpoint_dir": InputSource("FORGE_OUT_DIR", "/checkpoints"),
        "export_dir": InputSource("FORGE_OUT_DIR", "/hf_export"),
    }
)
# the inputs that name data -> their split name when a config mode lays them out as a dataset folder (DATA_SPLITS)
INPUT_SPLITS: Mapping[str, str] = MappingProxyType({"train_data": "train", "validation_data": "test"})


def input_value(name: str, environ: Mapping[str, str]) -> str | None:
    """Return the value of input `name` in `environ`, or None when it is unknown or its variable is unset or empty."""
    source = INPUTS.get(name)
    if source is None:
        return None
    if source.first and environ.get(source.first, ""):
        return environ[source.first]
    value = environ.get(source.variable, "")
    if not value:
        return None
    return value.rstrip("/") + source.suffix if source.suffix else value
