"""The quota options shared by `sf console quota set` (local state) and `sf admin quota set` (over the API), the body
they make, and how a quota prints: derived from the quota table (`starforge.wire.quota_fields`: each settable cap's
flags and help), so the two commands cannot drift apart and a new cap needs no edit here."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

import typer

from starforge.wire.quota_fields import INTEGER, NAMES, NUMBER, QUOTA_FIELDS, SETTABLE, QuotaField

__all__ = ["quota_options", "quota_text", "quota_values"]

_LISTS = frozenset(cap.name for cap in QUOTA_FIELDS if cap.type == NAMES)
_TYPES: dict[str, Any] = {INTEGER: int, NUMBER: float, NAMES: list[str]}
Command = TypeVar("Command", bound=Callable[..., Any])


def _option(cap: QuotaField) -> inspect.Parameter:
    """Return the command parameter of one cap: named as the cap, shown as its flags (`--gpus`), None when not given."""
    kind = _TYPES[cap.type]
    return inspect.Parameter(cap.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                             annotation=Annotated[kind | None, typer.Option(*cap.options, help=cap.help)])


def quota_options(command: Command) -> Command:
    """Give `command` one option per settable quota cap, in place of its `quota` parameter, which receives the body
    they make (`quota_values`: only the caps given). Put it below the Typer `command` decorator."""
    signature = inspect.signature(command, eval_str=True)
    parameters = [new for old in signature.parameters.values()
                  for new in ([_option(cap) for cap in SETTABLE] if old.name == "quota" else [old])]

    @functools.wraps(command)
    def run(**given: Any) -> Any:
        caps = {cap.name: given.pop(cap.name, None) for cap in SETTABLE}
        return command(**given, quota=quota_values(caps))

    run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run  # type: ignore[return-value]


def quota_values(given: Mapping[str, Any]) -> dict[str, Any]:
    """Return the quota keys the options set (the console keeps every other key's value); a list cap takes repeated
    options and comma lists."""
    values: dict[str, Any] = {}
    for key, value in given.items():
        if value is None:
            continue
        values[key] = [name.strip() for item in value for name in item.split(",") if name.strip()] \
            if key in _LISTS else value
    return values


def quota_text(quota: dict[str, Any]) -> str:
    """Return a quota as `key: value` lines (a list joined by commas; no list means every profile)."""
    lines = []
    for key, value in quota.items():
        if key in _LISTS:
            value = ", ".join(str(v) for v in value) if value else "(all)"
        lines.append(f"{key}: {value}")
    return "\n".join(lines)
