"""What `sf export` and `sf eval` share: find the run (id, prefix, or experiment → its newest training run), ask
the console for the follow-up, print the job and the next steps, and optionally wait for it to end."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer

from starforge.cli._job_text import age
from starforge.cli._output import EXIT_OK, EXIT_REFUSED, Output
from starforge.cli.cmd_job import console_session

if TYPE_CHECKING:
    from starforge.client import Console, Job

__all__ = ["request_followup"]

_POLL_SECONDS = 0.5


def _training_run(out: Output, console: Console, handle: str) -> Job:
    """Return the job `handle` names; an experiment (or name) with several jobs means its newest training run (a
    follow-up is never the run to export), said so."""
    found = console.pick_job(handle)
    assert found.job is not None  # `pick_job` raises when the handle names no job
    if not found.by_name or len(found.matches) < 2:
        return found.job
    runs = [job for job in found.matches if not job.raw.get("action")] or list(found.matches)
    newest: Job = runs[0]  # the console lists jobs newest first
    out.info(f"{handle!r} has {len(found.matches)} jobs; using its newest run, {newest.ref} ({newest.status}, "
             f"submitted {age(newest.submitted_at)})")
    return newest


def wait_for_end(console: Console, ref: str) -> str:
    """Poll the job until it reaches a final status and return that status."""
    from starforge.client import TERMINAL

    while True:
        status = console.job_detail(ref).status
        if status in TERMINAL:
            return status
        time.sleep(_POLL_SECONDS)


def request_followup(handle: str, action: str, *, as_json: bool, benchmarks: Sequence[str] | None = None,
                     profile: str = "", wait: bool = False) -> None:
    """Queue `action` on the run `handle` names and print the follow-up job (exit 1 with the console's reasons and
    hints when it refuses; with `wait`, exit 0 only once the follow-up has succeeded)."""
    from starforge.client import Rejected

    out = Output(as_json=as_json)
    with console_session(out) as console:
        parent = _training_run(out, console, handle)
        try:
            made = console.followup(parent.ref, action, benchmarks=benchmarks, profile=profile or None)
        except Rejected as exc:
            out.fail(exc, title=f"The {action} was refused")
        body: dict[str, Any] = dict(made.raw)
        final = wait_for_end(console, made.job_id) if wait else ""
    if final:
        body["final_status"] = final
    out.emit(body, lambda _: f"{action} job {made.job_id} (follows {parent.ref})" + (f": {final}" if final else ""))
    if not as_json:
        if made.message and not final:
            out.info(made.message)
        out.hint(f"follow it with `sf job logs {made.job_id}`")
        out.hint(f"fetch its files with `sf job artifacts {made.job_id} --download DIR`")
    if final and final != "succeeded":
        raise typer.Exit(EXIT_REFUSED)
    raise typer.Exit(EXIT_OK)
