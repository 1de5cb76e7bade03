"""Values in Hydra's override grammar (`key=value`), as NeMo-RL's and verl's command lines parse them.

A string stays unquoted only when Hydra would read it back as that same string: made of the characters the
grammar allows unquoted (plus whole `${...}` interpolations), and not readable as null, a boolean or a number.
Anything else is quoted; inside quotes only the quote itself and the backslashes before a quote (or before the
closing quote) are escaped, which is the grammar's whole escaping rule for quoted values. A comma therefore never
reaches Hydra bare, where it would start a sweep (`a,b`).
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["hydra_value"]

_INTERPOLATION = r"\$\{[^{}]*\}"
_UNQUOTED = re.compile(rf"(?:[A-Za-z0-9_/+.%*@?|:-]|{_INTERPOLATION})+")
_NUMBER = re.compile(
    r"[+-]?(?:[0-9](?:_?[0-9])*(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)(?:[eE][+-]?[0-9](?:_?[0-9])*)?"
)
_WORDS = frozenset({"null", "true", "false", "inf", "+inf", "-inf", "nan", "+nan", "-nan"})


def hydra_value(value: Any) -> str:
    """Return a JSON value (scalars, lists, mappings with string keys) as a Hydra override value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ",".join(hydra_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_key(k)}:{hydra_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write a {type(value).__name__} as a Hydra value")


def _string(text: str) -> str:
    if _UNQUOTED.fullmatch(text) and not _NUMBER.fullmatch(text) and text.lower() not in _WORDS:
        return text
    return _quote(text)


def _key(key: object) -> str:
    # dictionary keys cannot be quoted in the grammar: its special characters are escaped instead
    return re.sub(r"([\\()\[\]{}:=, \t])", r"\\\1", str(key))


def _quote(text: str) -> str:
    quote = "'" if "'" not in text or '"' in text else '"'
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            j = i
            while j < n and text[j] == "\\":
                j += 1
            run = text[i:j]
            out.append(run * 2 if j == n or text[j] == quote else run)
            i = j
        elif char == quote:
            out.append("\\" + quote)
            i += 1
        else:
            out.append(char)
            i += 1
    return quote + "".join(out) + quote
