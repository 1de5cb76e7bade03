"""The config modes (`adapter_options.config_mode`): how a framework takes its config file, overrides and inputs.

Each mode answers three questions, and `forge-launch` (`starforge.runner`) is the one adapter that acts on them:

* how one override is rendered (`overrides`): `ASSIGN` `path=value` in the Hydra/OmegaConf override grammar,
  `FLAG` `--path value`, `ARGPARSE` `--path value` with argparse's conventions (a true boolean is a bare switch, a
  false one and a null are left out, a list gives its items), or `MERGE` (set inside the written config file);
* how the experiment's config file reaches the framework (`config`): `CONFIG_OPTION` `--config <experiment file>`
  (the framework reads it), `CONFIG_WRITTEN` the merged mapping written as YAML to `WRITTEN_CONFIG_FILE` and
  passed as `--config`, `CONFIG_ARGV` the merged mapping rendered into argv items, `CONFIG_NONE` not at all (the
  entrypoint finds its own config);
* how a data input is shaped (`data`): `DATA_PATH` the job-side path as text, or `DATA_SPLITS` a dataset folder
  `forge-launch` lays out in `SPLITS_DIR` (the train data linked as `train<suffix>`, the validation data as
  `test<suffix>`), which `datasets.load_dataset(folder)` reads as the `train` and `test` splits: what TRL's scripts
  take as `dataset_name` (their default `dataset_train_split` and `dataset_test_split`);
* which module wraps a module entrypoint (`shim`): the TRL mode starts `python -m starforge.trainers.trl_entry
  MODULE ...`, which installs StarForge's trainer callback and then runs MODULE unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = [
    "ARGPARSE",
    "ASSIGN",
    "CONFIG_ARGV",
    "CONFIG_MODES",
    "CONFIG_NONE",
    "CONFIG_OPTION",
    "CONFIG_WRITTEN",
    "DATA_PATH",
    "DATA_SPLITS",
    "FLAG",
    "MERGE",
    "SPLITS_DIR",
    "TRAINER_SHIM",
    "WRITTEN_CONFIG_FILE",
    "ConfigMode",
    "carries_document",
    "entry_shim",
    "override_style",
    "takes_config_option",
]

ASSIGN: Final = "assign"  # `path=value` (Hydra's override grammar: NeMo-RL, verl)
FLAG: Final = "flag"  # `--path value`, booleans as `true` / `false`
ARGPARSE: Final = "argparse"  # `--path value`; `--path` alone for true; nothing for false or null; lists as items
MERGE: Final = "merge"  # set at `path` inside the config file the runner writes

CONFIG_OPTION: Final = "option"
CONFIG_WRITTEN: Final = "written"
CONFIG_ARGV: Final = "argv"
CONFIG_NONE: Final = "none"

DATA_PATH: Final = "path"
DATA_SPLITS: Final = "splits"

# where `forge-launch` writes a CONFIG_WRITTEN file, relative to the job's working directory (the bundle root,
# whose `.starforge/` a bundle can never provide: unpacking skips it)
WRITTEN_CONFIG_FILE: Final = ".starforge/config.yaml"
# where `forge-launch` links a DATA_SPLITS mode's data inputs (same working-directory rule)
SPLITS_DIR: Final = ".starforge/data"
# the module that installs the trainer callback, then runs a trl recipe's module
TRAINER_SHIM: Final = "starforge.trainers.trl_entry"


@dataclass(frozen=True, slots=True)
class ConfigMode:
    """One config mode: override rendering, how the config reaches the framework, data shape, entrypoint shim."""

    overrides: str
    config: str
    data: str = DATA_PATH
    shim: str = ""


CONFIG_MODES: Mapping[str, ConfigMode] = MappingProxyType(
    {
        # NeMo-RL (`examples/run_*.py --config FILE key=value ...`), tinyrl, evalkit
        "dot-overrides": ConfigMode(ASSIGN, CONFIG_OPTION),
        # verl (`python -m verl.trainer.main_ppo key=value ...`): a Hydra app takes no `--config`
        "hydra-overrides": ConfigMode(ASSIGN, CONFIG_ARGV),
        # OpenRLHF (`python -m openrlhf.cli.train_ppo_ray --key value --switch ...`)
        "cli-flags": ConfigMode(ARGPARSE, CONFIG_ARGV),
        # custom/custom: the experiment's own script reads its own config
        "cli-args": ConfigMode(FLAG, CONFIG_NONE),
        # TRL (`trl sft --config FILE`, and StarForge's entry modules that read the same file)
        "trl-yaml": ConfigMode(MERGE, CONFIG_WRITTEN, DATA_SPLITS, TRAINER_SHIM),
        "pytorch-yaml": ConfigMode(MERGE, CONFIG_WRITTEN),
    }
)


def override_style(mode: str) -> str | None:
    """Return how `mode` renders an override (`ASSIGN`, `FLAG`, `ARGPARSE` or `MERGE`), or None when it is unknown."""
    known = CONFIG_MODES.get(mode)
    return known.overrides if known is not None else None


def takes_config_option(mode: str) -> bool:
    """Return True when a framework in `mode` is given the experiment's config file as `--config PATH`."""
    known = CONFIG_MODES.get(mode)
    return known is not None and known.config == CONFIG_OPTION


def entry_shim(mode: str) -> str:
    """Return the module that wraps a module entrypoint in `mode` (empty when the module runs as it is)."""
    known = CONFIG_MODES.get(mode)
    return known.shim if known is not None else ""


def carries_document(mode: str) -> bool:
    """Return True when the plan of a job in `mode` carries the experiment's config mapping (written or argv)."""
    known = CONFIG_MODES.get(mode)
    return known is not None and known.config in (CONFIG_WRITTEN, CONFIG_ARGV)
