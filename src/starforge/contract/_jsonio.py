"""JSON in and out for JobSpecs: a loader that remembers repeated keys, and the canonical file form."""

from __future__ import annotations

import json
from typing import Any

from ._model import JobSpec

__all__ = ["JsonObject", "dumps", "loads"]


class JsonObject(dict[str, Any]):
    """A JSON object that remembers which keys the document repeated (the last value wins)."""

    __slots__ = ("repeated_keys",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.repeated_keys: tuple[str, ...] = ()
        if len(self) != len(pairs):
            seen: set[str] = set()
            repeated: list[str] = []
            for key, _ in pairs:
                if key in seen and key not in repeated:
                    repeated.append(key)
                seen.add(key)
            self.repeated_keys = tuple(repeated)


def loads(text: str | bytes) -> Any:
    """Parse JSON text, keeping NaN/Infinity as floats (the parser refuses them at their field) and repeated keys."""
    return json.loads(text, object_pairs_hook=JsonObject)


def dumps(spec: JobSpec, *, indent: int | None = 2) -> str:
    """Return the canonical JSON text of `spec` (`.starforge/jobspec.json` form), non-ASCII kept, newline-terminated."""
    if indent is None:
        return json.dumps(spec.to_dict(), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return json.dumps(spec.to_dict(), ensure_ascii=False, indent=indent, allow_nan=False) + "\n"
