"""A small collector of manifest problems with typed readers, shared by the manifest validators."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ._values import type_name

__all__ = ["Checker", "SAFE_SEGMENT", "is_relative_path", "join"]

SAFE_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)
_JSON_SCALARS = (str, int, float, bool, type(None))


def join(field: str, key: str | int) -> str:
    """Return the child field of `field`: `a.b` for a key, `a[0]` for a list index."""
    if isinstance(key, int):
        return f"{field}[{key}]"
    return f"{field}.{key}" if field else key


def is_relative_path(value: str) -> bool:
    """Return True when `value` is a non-empty relative POSIX path with no `..` part and no backslash or drive."""
    if not value or value.startswith(("/", "~")) or "\\" in value or re.match(r"[A-Za-z]:", value):
        return False
    return ".." not in value.split("/")


class Checker:
    """Collect `(field, message)` problems while typed readers walk a loaded manifest."""

    __slots__ = ("problems",)

    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []

    def bad(self, field: str, message: str) -> None:
        """Record a problem at `field`."""
        self.problems.append((field, message))

    def mapping(self, value: Any, field: str, *, required: bool = True) -> dict[str, Any] | None:
        """Return `value` when it is a mapping; record a problem (missing or wrong type) and return None otherwise."""
        if isinstance(value, dict):
            return value
        if value is None:
            if required:
                self.bad(field, "is required (an object)")
            return None
        self.bad(field, f"must be an object, got {type_name(value)}")
        return None

    def string(self, obj: Mapping[str, Any], key: str, field: str, *, required: bool = False,
               nonempty: bool = False) -> str | None:
        """Return `obj[key]` as a string; None when absent (a problem when required) or of the wrong type."""
        value = obj.get(key)
        if value is None:
            if required:
                self.bad(join(field, key), "is required")
            return None
        if not isinstance(value, str):
            self.bad(join(field, key), f"must be a string, got {type_name(value)}")
            return None
        if (required or nonempty) and not value.strip():
            self.bad(join(field, key), "must not be empty")
            return None
        return value

    def segment(self, obj: Mapping[str, Any], key: str, field: str, *, required: bool = False) -> str | None:
        """Return `obj[key]` when it is a safe segment; record a problem otherwise."""
        value = self.string(obj, key, field, required=required)
        if value is not None and not SAFE_SEGMENT.fullmatch(value):
            self.bad(join(field, key), f"{value!r} is not a safe segment ^[A-Za-z0-9][A-Za-z0-9._-]*$")
            return None
        return value

    def enum(self, obj: Mapping[str, Any], key: str, field: str, allowed: tuple[str, ...], *,
             required: bool = False, empty_ok: bool = False) -> str | None:
        """Return `obj[key]` when it is one of `allowed` (or empty with `empty_ok`); record a problem otherwise."""
        value = self.string(obj, key, field, required=required)
        if value is None or (empty_ok and value == "") or value in allowed:
            return value
        self.bad(join(field, key), f"{value!r} is not one of {', '.join(allowed)}")
        return None

    def boolean(self, obj: Mapping[str, Any], key: str, field: str) -> bool | None:
        """Return `obj[key]` when it is a boolean or absent (None); record a problem otherwise."""
        value = obj.get(key)
        if value is None or isinstance(value, bool):
            return value
        self.bad(join(field, key), f"must be a boolean, got {type_name(value)}")
        return None

    def strings(self, obj: Mapping[str, Any], key: str, field: str, *, required: bool = False,
                nonempty: bool = False) -> list[str] | None:
        """Return `obj[key]` as a list of non-empty strings; record a problem per bad element."""
        value = obj.get(key)
        here = join(field, key)
        if value is None:
            if required:
                self.bad(here, "is required (a list)")
            return None
        if not isinstance(value, list):
            self.bad(here, f"must be a list, got {type_name(value)}")
            return None
        if nonempty and not value:
            self.bad(here, "must not be empty")
        ok = True
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                self.bad(join(here, i), f"must be a non-empty string, got {type_name(item)}")
                ok = False
        return value if ok else None

    def json_values(self, value: Any, field: str) -> None:
        """Record every non-string mapping key, non-finite float and non-JSON value anywhere under `value`."""
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    self.bad(field or "<root>", f"key {key!r} is not a string (YAML reads keys such as on, off, "
                                                "yes, no, true and numbers as non-strings): quote it")
                    continue
                self.json_values(item, join(field, key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self.json_values(item, join(field, i))
        elif isinstance(value, float):
            if not math.isfinite(value):
                self.bad(field, f"{value} is not a finite number")
        elif not isinstance(value, _JSON_SCALARS) and not hasattr(value, "isoformat"):
            self.bad(field, f"a YAML {type(value).__name__} value has no JSON form")
