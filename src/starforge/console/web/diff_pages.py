"""The diff page of the web console (`/ui/diff?a=&b=`): why two of the caller's runs differ, the summary first, then
each section, the bundles' per-file stat and the final metrics side by side.

Tier: use case (the read goes through `runs.diff_runs`, which owns its transaction; no HTTP here). A missing or
malformed id is the form again with a message; a well-formed id that is not the caller's run is a NotFound (404),
exactly as the API answers it.
"""

from __future__ import annotations

import re

from ..services.context import Runtime
from ..services.runs import diff_runs
from .pages import frame
from .render import render
from .sessions import WebCaller

__all__ = ["RUN_REF", "diff_page"]

RUN_REF = re.compile(r"r-[0-9a-z]{10}")  # a run id as `jobs.rows.new_run_id` draws them


def _problem(a: str, b: str) -> str:
    if not a or not b:
        return "" if not a and not b else "Name both runs to compare."
    bad = [name for name, ref in (("A", a), ("B", b)) if not RUN_REF.fullmatch(ref)]
    if bad:
        return f"Run {' and '.join(bad)} is not a run id (like r-0123456789): copy it from a job's page."
    return ""


def diff_page(rt: Runtime, caller: WebCaller, *, a: str, b: str) -> str:
    """Return the diff of the caller's runs `a` and `b`, or the form to name them (with why, when they were given
    wrongly); NotFound for a run the caller may not see."""
    a, b = a.strip(), b.strip()
    problem = _problem(a, b)
    if problem or not (a and b):
        return render("diff.html", **frame(caller, "jobs"), diff=None, a=a, b=b, problem=problem)
    return render("diff.html", **frame(caller, "jobs"), diff=diff_runs(rt, user=caller.user, a=a, b=b), a=a, b=b,
                  problem="")
