"""A tiny block-style YAML writer whose output PyYAML's `safe_load` (YAML 1.1) reads back to the same JSON values.

Only what a launch plan's config document holds is written: mappings with string keys, lists, strings, integers,
finite floats, booleans and null. Two YAML 1.1 traps are avoided on purpose: a float is always written with a dot
in its mantissa (`1.0e-06`; PyYAML reads `1e-06` as text), and a string is left unquoted only when YAML 1.1 cannot
read it as anything else (`yes`, `on`, `null`, `1.0`, `12:30` and the like are quoted).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["dump_yaml", "yaml_scalar"]

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
# YAML 1.1 words that load as booleans or null, whatever their case
_RESERVED = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null"})
# characters YAML 1.1 does not accept literally (or reads as line breaks) inside a double-quoted scalar
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff\ud800-\udfff]")


def dump_yaml(document: Mapping[str, Any]) -> str:
    """Return `document` as a block-style YAML text ending in a newline (`{}` for an empty mapping)."""
    if not document:
        return "{}\n"
    lines: list[str] = []
    _mapping(document, 0, lines)
    return "\n".join(lines) + "\n"


def yaml_scalar(value: Any) -> str:
    """Return one scalar (str, int, float, bool or None) as YAML 1.1 text that loads back to the same value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return _string(value)
    raise TypeError(f"cannot write a {type(value).__name__} as a YAML scalar")


def _float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}{e}{exponent}"


def _string(value: str) -> str:
    if _PLAIN.fullmatch(value) and value.lower() not in _RESERVED:
        return value
    quoted = json.dumps(value, ensure_ascii=False)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _mapping(node: Mapping[str, Any], indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for key, value in node.items():
        head = f"{pad}{_string(str(key))}:"
        if isinstance(value, Mapping) and value:
            lines.append(head)
            _mapping(value, indent + 2, lines)
        elif isinstance(value, list) and value:
            lines.append(head)
            _sequence(value, indent + 2, lines)
        else:
            lines.append(f"{head} {_inline(value)}")


def _sequence(items: list[Any], indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for item in items:
        if isinstance(item, (Mapping, list)) and item:
            nested: list[str] = []
            if isinstance(item, Mapping):
                _mapping(item, indent + 2, nested)
            else:
                _sequence(item, indent + 2, nested)
            nested[0] = f"{pad}- {nested[0][indent + 2:]}"
            lines.extend(nested)
        else:
            lines.append(f"{pad}- {_inline(item)}")


def _inline(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return yaml_scalar(value)
