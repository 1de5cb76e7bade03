"""`sf export JOB`: export a succeeded run's latest checkpoint as a follow-up job, as `--then export` would have."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Export a finished run's checkpoint as a follow-up job.",
)


@app.command()
def export(
    job: Annotated[str, typer.Argument(help="job id, any unambiguous prefix of one, or the experiment name "
                                            "(its newest run)")],
    profile: Annotated[str, typer.Option("--profile", help="run the export on this profile (default: the run's)")] = "",
    wait: Annotated[bool, typer.Option("--wait", help="wait until the export job ends; exit 0 only if it succeeded")]
    = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the follow-up job as JSON")] = False,
) -> None:
    """Queue the recipe's export step on a succeeded run, starting from its latest checkpoint; exit 1 when the
    console refuses (not yours, not succeeded, no checkpoint, no export action)."""
    from starforge.cli._followup import request_followup

    request_followup(job, "export", as_json=as_json, profile=profile, wait=wait)
