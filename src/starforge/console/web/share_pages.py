"""The administrators' fair-share page: each account's weight and, per series, its share, decayed usage, the GPUs it
holds and borrows, and its waiting jobs; with the form setting an account's weight (CSRF checked), handed to the
same service as `/api/admin/shares` (`quota.share_admin`).

Tier: use case (the services called own their transactions; no HTTP here). A refused weight is the page again with
the problem at its field.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from ..services.context import Runtime
from ..services.errors import NotFound, Rejected
from ..services.quota import share_admin
from .admin_pages import FormAnswer, FormView, admin_only, form_number
from .pages import frame
from .render import render
from .sessions import WebCaller

__all__ = ["set_weight", "shares_page", "share_rows"]

_DONE = "Weight saved: the queue is ordered by it from the scheduler's next cycle."


def share_rows(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per account and series it has a share, usage or GPUs on (one row without a series for an
    account with none); `first` marks an account's first row, which carries its weight and waiting jobs."""
    rows = []
    for line in lines:
        per = {key: line.get(key) or {} for key in ("share", "usage_gpu_hours", "allocated", "borrowed")}
        series = sorted({name for values in per.values() for name in values}) or [""]
        for index, name in enumerate(series):
            rows.append({"first": index == 0, "span": len(series), "username": line.get("username", ""),
                         "weight": line.get("weight"), "waiting_jobs": line.get("waiting_jobs", 0), "series": name,
                         **{key: values.get(name) for key, values in per.items()}})
    return rows


def shares_page(rt: Runtime, caller: WebCaller, *, done: str = "", form: FormView | None = None) -> str:
    """Return the fair-share page (403 for anyone but an administrator)."""
    admin_only(caller)
    body = share_admin.show_shares(rt)
    return render("shares.html", **frame(caller, "shares"), body=body, rows=share_rows(body["shares"]),
                  accounts=[line["username"] for line in body["shares"]], form=form or FormView(),
                  done=_DONE if done == "weight" else "", max_weight=share_admin.MAX_WEIGHT)


def set_weight(rt: Runtime, caller: WebCaller, *, username: str, weight: str, csrf: str) -> FormAnswer:
    """Set an account's weight from the form (`share_admin.set_share`, the body of `PUT /api/admin/shares/{user}`);
    a refused weight, or an unknown account, is the page again with the problem at its field."""
    admin_only(caller, csrf)
    values = {"username": username, "weight": weight}
    try:
        share_admin.set_share(rt, username=username, body={"weight": form_number(weight.strip())})
    except (Rejected, NotFound) as refused:
        errors = {p.field: p.message + (f" — {p.hint}" if p.hint else "") for p in refused.problems or []}
        form = FormView(values, errors or {"username": refused.detail})
        return FormAnswer(refused.status, shares_page(rt, caller, form=form))
    return FormAnswer(303, location="/ui/admin/shares?" + urlencode({"done": "weight"}))
