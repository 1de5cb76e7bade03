"""The parse context: collects problems and warnings while typed readers walk a JSON document."""

from __future__ import annotations

from math import isfinite
from typing import Any

from ._jsonio import JsonObject
from ._problems import Problem

__all__ = ["ANY_KEYS", "MISSING", "Walk", "type_name"]


_FLAT = (str, int, bool, float, type(None))
_NON_FINITE_HINT = "NaN and infinities are refused"


def _flat_and_finite(obj: dict[str, Any]) -> bool:
    """Return True when every value is a JSON scalar and no float is NaN or infinite."""
    for value in obj.values():
        kind = type(value)
        if kind is float:
            if not isfinite(value):
                return False
        elif kind not in _FLAT:
            return False
    return True


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class _AnyKeys(frozenset[str]):
    """A key set that admits every key (free-form maps such as labels, roles and hyperparams)."""

    def issuperset(self, other: Any) -> bool:
        return True


ANY_KEYS: frozenset[str] = _AnyKeys()


def type_name(value: Any) -> str:
    """Return a short English name of a JSON value's type ("a string", "an integer", "null", …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class Walk:
    """Collect problems and warnings; typed readers return a value or None after reporting why."""

    __slots__ = ("problems", "warnings")

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []

    def bad(self, field: str, code: str, message: str, hint: str = "") -> None:
        """Record a problem."""
        self.problems.append(Problem(field, code, message, hint))

    def warn(self, field: str, code: str, message: str) -> None:
        """Record a warning (never a rejection)."""
        self.warnings.append(Problem(field, code, message))

    def obj(self, value: Any, field: str, known: frozenset[str]) -> dict[str, Any] | None:
        """Return `value` as an object (`null` and absent become `{}`), warning on unknown and repeated keys."""
        if (type(value) is dict or (type(value) is JsonObject and not value.repeated_keys)) and (
            known is ANY_KEYS or known.issuperset(value)
        ):
            return value
        if value is None or value is MISSING:
            return {}
        if not isinstance(value, dict):
            self.bad(field, "not_an_object", f"must be an object, got {type_name(value)}")
            return None
        repeated = None if type(value) is dict else getattr(value, "repeated_keys", None)
        if repeated or not known.issuperset(value):
            self._warn_keys(value, field, known, repeated)
        return value

    def _warn_keys(self, value: dict[str, Any], field: str, known: frozenset[str], repeated: Any) -> None:
        prefix = "" if field == "<root>" else f"{field}."
        if repeated:
            for key in repeated:
                self.warn(prefix + (key or '""'), "duplicate_key", "key repeated in the JSON object; the last value wins")
        if not known.issuperset(value):
            for key in value:
                if key not in known:
                    self.warn(prefix + (key or '""'), "unknown_field", "unknown field, ignored")

    # `string`, `required`, `positive_int` and `finite_number` take the field path as `parent` and `key`:
    # the dotted path is only built when there is a problem to report (most values have none).

    def string(self, container: dict[str, Any], parent: str, key: str) -> str | None:
        """Return the trimmed string at `key` (`""` when absent or null); None after reporting a problem."""
        value = container.get(key)
        if isinstance(value, str):
            return value.strip()
        if value is None:
            return ""
        self.bad(f"{parent}.{key}", "not_a_string", f"must be a string, got {type_name(value)}")
        return None

    def required(self, container: dict[str, Any], parent: str, key: str) -> str | None:
        """Return the trimmed, non-blank string at `key`; None after reporting why it is not one."""
        value = container.get(key)
        if isinstance(value, str):
            value = value.strip()
            if value:
                return value
            self.bad(f"{parent}.{key}", "missing_field", "is required and must not be blank")
        elif value is None:
            self.bad(f"{parent}.{key}", "missing_field", "is required")
        else:
            self.bad(f"{parent}.{key}", "not_a_string", f"must be a string, got {type_name(value)}")
        return None

    def positive_int(self, value: Any, parent: str, key: str) -> int | None:
        """Return `value` when it is a JSON integer ≥ 1; None after reporting a problem."""
        if type(value) is int and value >= 1:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            message = f"must be a positive integer, got {type_name(value)}"
            self.bad(f"{parent}.{key}", "not_an_integer", message)
            return None
        if value < 1:
            self.bad(f"{parent}.{key}", "not_positive", f"must be a positive integer, got {value}")
            return None
        return value

    def finite_number(self, value: Any, parent: str, key: str) -> float | None:
        """Return `value` when it is a finite JSON number (not a boolean); None after reporting a problem."""
        if type(value) is int or (type(value) is float and isfinite(value)):
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.bad(f"{parent}.{key}", "not_a_number", f"must be a number, got {type_name(value)}")
            return None
        if isinstance(value, float) and not isfinite(value):
            self.bad(f"{parent}.{key}", "not_finite", "must be a finite number", _NON_FINITE_HINT)
            return None
        return value

    def list_of(self, value: Any, field: str) -> list[Any] | None:
        """Return `value` as a list (`null` and absent become `[]`); None after reporting a problem."""
        if type(value) is list:
            return value
        if value is None or value is MISSING:
            return []
        if not isinstance(value, list):
            self.bad(field, "not_a_list", f"must be an array, got {type_name(value)}")
            return None
        return value

    def no_non_finite(self, value: Any, field: str) -> bool:
        """Report every NaN or infinity inside `value` at its own path; return True when there is none."""
        if isinstance(value, dict) and _flat_and_finite(value):
            return True
        if isinstance(value, float):
            if isfinite(value):
                return True
            self.bad(field, "not_finite", "must be a finite number", _NON_FINITE_HINT)
            return False
        if isinstance(value, dict):
            ok = True
            for key, item in value.items():
                ok = self.no_non_finite(item, f"{field}.{key}") and ok
            return ok
        if isinstance(value, list):
            ok = True
            for index, item in enumerate(value):
                ok = self.no_non_finite(item, f"{field}[{index}]") and ok
            return ok
        return True

