"""A job's page in words: a failed job's reason (the log's failure line, the exit code only as a detail), its
status history as sentences, and the parts the page adds about what the run is made of and its lineage.

Tier: use case (the reads go through `runs`, which owns its transactions; the rest is pure; no HTTP here).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..services.context import Runtime
from ..services.runs import lineage, run_inputs
from .sessions import WebCaller

__all__ = ["STATUS_WORDS", "event_words", "failure_words", "provenance_parts"]

STATUS_WORDS = {
    "": "new", "queued": "queued", "pending": "waiting for capacity", "paused": "paused",
    "submitted": "placed on an engine", "preparing": "preparing its runtime", "running": "running",
    "succeeded": "succeeded", "failed": "failed", "stopped": "stopped",
}
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_EXIT = re.compile(r"^exit code (-?\d+)(?::\s*(.*))?$", re.S)


def failure_words(view: dict[str, Any]) -> dict[str, str] | None:
    """Return `{headline, detail}` for a failed job (None for any other): the failure line the console computed as
    the headline, `exit code N` as the detail; a reason that is not an exit code is the headline as it is."""
    if view.get("status") != "failed":
        return None
    reason = str(view.get("message") or "").strip()
    found = _EXIT.match(reason)
    if found is None:
        return {"headline": reason or "The job failed without saying why.", "detail": ""}
    code, line = found.group(1), (found.group(2) or "").strip()
    headline = line or "Its process ended with an error, and its log names none (see the log below)."
    return {"headline": headline, "detail": f"exit code {code}"}


def _words(found: re.Match[str]) -> str:
    try:
        loaded = json.loads(found.group(0))
    except ValueError:
        return found.group(0)
    if not isinstance(loaded, dict):
        return found.group(0)
    said = ", ".join(f"{str(k).replace('_', ' ')} {v if isinstance(v, str) else json.dumps(v)}"
                     for k, v in loaded.items())
    return f"({said})" if said else ""


def _reason_words(reason: str) -> str:
    """A reason with any JSON object in it (an engine's details) said as words: `{"exit_code": 2}` → `(exit code 2)`."""
    return _JSON_OBJECT.sub(_words, reason.strip())


def event_words(event: dict[str, Any]) -> dict[str, Any]:
    """Return a status event as the page says it: `{at, sentence, reason}` ("queued → running" as "running (was
    queued)"), any JSON reason turned into `key: value` words."""
    before, after = event.get("from") or "", event.get("to") or ""
    shown_after = STATUS_WORDS.get(after, after)
    if before == after:
        sentence = f"still {shown_after}"
    elif not before:
        sentence = shown_after.capitalize()
    else:
        sentence = f"{shown_after.capitalize()} (was {STATUS_WORDS.get(before, before)})"
    return {"at": event.get("at"), "sentence": sentence, "reason": _reason_words(str(event.get("reason") or ""))}


def provenance_parts(rt: Runtime, caller: WebCaller, ref: str) -> dict[str, Any]:
    """Return what a job's page shows of the run's own definition: `inputs` (`runs.run_inputs`) and `lineage`."""
    return {"inputs": run_inputs(rt, user=caller.user, ref=ref), "lineage": lineage(rt, user=caller.user, ref=ref)}
