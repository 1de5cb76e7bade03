"""JSON text from outside the process: nesting bounded before parsing, repeated keys remembered, problems as values.

Tier: shared (pure; no database). The API's body readers and the services that decode embedded JSON (a multipart
`spec` part, a login's device description) use the same two functions, so every JSON document obeys one limit.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...contract import JsonObject, Problem

__all__ = ["MAX_JSON_DEPTH", "json_depth_problem", "load_json"]

MAX_JSON_DEPTH = 64  # arrays and objects inside each other; real documents stay under 10
# A JSON string, or an unterminated one running to the end of the text: the pattern never fails once it starts at a
# quote, so removing strings is one linear pass whatever the input.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth_problem(text: str, field: str) -> Problem | None:
    """Return a `json_too_deep` problem for `field` when arrays and objects in `text` nest deeper than
    MAX_JSON_DEPTH (brackets inside strings do not count); scans iteratively, so any depth is safe to measure."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return None  # too few openings to nest that deep (the usual case, counted at C speed)
    depth = 0
    for bracket in _NOT_BRACKET.sub("", _STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return Problem(field, "json_too_deep", f"arrays and objects nest more than {MAX_JSON_DEPTH} levels deep",
                           f"flatten the document to at most {MAX_JSON_DEPTH} levels of nesting")
    return None


def load_json(raw: bytes | str, field: str) -> tuple[Any, list[Problem]]:
    """Return the JSON value of `raw` (repeated keys remembered) and no problem, or None and the problem:
    undecodable, nested deeper than MAX_JSON_DEPTH, or not JSON."""
    try:
        text = raw if isinstance(raw, str) else raw.decode(json.detect_encoding(raw), "surrogatepass")
    except (UnicodeDecodeError, LookupError) as exc:
        return None, [Problem(field, "invalid_json", f"not JSON text: {exc}", "send UTF-8 encoded JSON")]
    too_deep = json_depth_problem(text, field)
    if too_deep is not None:
        return None, [too_deep]
    try:
        return json.loads(text, object_pairs_hook=JsonObject), []
    except ValueError as exc:
        return None, [Problem(field, "invalid_json", f"not valid JSON: {exc}",
                              "send one JSON document, e.g. {\"key\": \"value\"}")]
