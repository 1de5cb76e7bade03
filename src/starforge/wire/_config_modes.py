"""The config modes (`adapter_options.config_mode`): how a framework takes its config file and its overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = ["ASSIGN", "CONFIG_MODES", "FLAG", "ConfigMode", "override_style", "takes_config_option"]

ASSIGN: Final = "assign"  # an override is rendered `path=value`
FLAG: Final = "flag"  # an override is rendered `--path value`


@dataclass(frozen=True, slots=True)
class ConfigMode:
    """One config mode: how `forge-launch` renders an override (None: it cannot) and whether argv gets `--config`."""

    overrides: str | None
    config_option: bool = False


CONFIG_MODES: Mapping[str, ConfigMode] = MappingProxyType(
    {
        "dot-overrides": ConfigMode(ASSIGN, config_option=True),
        "hydra-overrides": ConfigMode(ASSIGN, config_option=True),
        "cli-flags": ConfigMode(FLAG),
        "cli-args": ConfigMode(FLAG),
        "trl-yaml": ConfigMode(None),
        "pytorch-yaml": ConfigMode(None),
    }
)


def override_style(mode: str) -> str | None:
    """Return how `mode` renders an override (`ASSIGN` or `FLAG`), or None when it is unknown or cannot carry any."""
    known = CONFIG_MODES.get(mode)
    return known.overrides if known is not None else None


def takes_config_option(mode: str) -> bool:
    """Return True when a framework in `mode` is given its config file as `--config PATH`."""
    known = CONFIG_MODES.get(mode)
    return known is not None and known.config_option
