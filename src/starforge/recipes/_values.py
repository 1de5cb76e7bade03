"""The value check of one hyperparameter (§4.2 step 3): JSON type, finiteness, bounds and type-strict choices."""

from __future__ import annotations

import math
from typing import Any

from starforge.contract import (
    Problem,
    type_name,  # re-exported: the one JSON type naming
)

from ._model import Param

__all__ = ["as_object", "check_value", "describe", "strict_equal", "type_name"]

TYPES = ("int", "float", "bool", "str", "enum")


def as_object(value: Any) -> dict[str, Any]:
    """Return `value` when it is a JSON object (dict), else an empty one."""
    return value if isinstance(value, dict) else {}
def describe(value: Any) -> str:
    """Return `value` as JSON-like text for messages (`true`, `"fp8"`, `1e-06`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return '"' + value + '"'
    return str(value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def strict_equal(a: Any, b: Any) -> bool:
    """Return True when `a` equals `b` type-strictly: booleans only equal booleans, numbers compare numerically."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _number(a) and _number(b):
        return bool(a == b)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return type(a) is type(b) and bool(a == b)


def _type_data(param: Param, value: Any) -> dict[str, Any]:
    return {"name": param.name, "expected": param.type, "got": value}


def _type_problem(param: Param, value: Any, field: str) -> Problem | None:
    kind = param.type
    if kind == "int" and (not isinstance(value, int) or isinstance(value, bool)):
        hint = "write a whole number such as 8 (not 8.0, not \"8\")"
        return Problem(field, "hyperparameter_type", f"{param.name} must be an integer, got {type_name(value)}", hint,
                       _type_data(param, value))
    if kind == "float":
        if not _number(value):
            return Problem(field, "hyperparameter_type", f"{param.name} must be a number, got {type_name(value)}",
                           "write a number such as 1e-06 or 0.5, without quotes", _type_data(param, value))
        if isinstance(value, float) and not math.isfinite(value):
            return Problem(field, "not_finite", f"{param.name} must be finite, got {value}", "NaN and infinities are refused",
                           {"name": param.name})
    if kind == "bool" and not isinstance(value, bool):
        return Problem(field, "hyperparameter_type", f"{param.name} must be a boolean, got {type_name(value)}",
                       "write true or false without quotes", _type_data(param, value))
    if kind == "str" and not isinstance(value, str):
        return Problem(field, "hyperparameter_type", f"{param.name} must be a string, got {type_name(value)}",
                       "quote the value", _type_data(param, value))
    return None


def _choices_text(choices: tuple[Any, ...]) -> str:
    return ", ".join(describe(c) for c in choices)


def check_value(param: Param, value: Any, field: str) -> list[Problem]:
    """Return the problems of `value` for `param` at `field` (type, finiteness, bounds, choices); [] when valid."""
    if param.type != "enum":
        problem = _type_problem(param, value, field)
        if problem is not None:
            return [problem]
        if param.type in ("int", "float") and _number(value):
            bounds = _bounds(param, value, field)
            if bounds:
                return bounds
        if param.choices is None:
            return []
    choices = param.choices or ()
    if any(strict_equal(value, c) for c in choices):
        return []
    return [
        Problem(
            field,
            "hyperparameter_choice",
            f"{param.name}={describe(value)} is not one of {_choices_text(choices)}",
            f"choose one of {_choices_text(choices)} (types must match: true is not 1)",
            {"name": param.name, "got": value, "allowed": list(choices)},
        )
    ]


def _bounds(param: Param, value: int | float, field: str) -> list[Problem]:
    low, high = param.min, param.max
    if low is not None and param.exclusive_min and value <= low:
        return [_range_problem(param, value, field, f"must be greater than {low}", f"use a value above {low}")]
    if low is not None and value < low:
        return [_range_problem(param, value, field, f"is below the minimum {low}", f"use a value of at least {low}")]
    if high is not None and value > high:
        return [_range_problem(param, value, field, f"is above the maximum {high}", f"use a value of at most {high}")]
    return []


def _range_problem(param: Param, value: int | float, field: str, why: str, hint: str) -> Problem:
    bounds: dict[str, Any] = {k: v for k, v in (("min", param.min), ("max", param.max)) if v is not None}
    if param.min is not None and param.exclusive_min:
        bounds["exclusive_min"] = True
    return Problem(field, "hyperparameter_range", f"{param.name}={value} {why}", hint,
                   {"name": param.name, "got": value, "range": bounds})
