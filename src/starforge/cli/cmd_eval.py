"""`sf eval JOB`: evaluate a succeeded run's latest checkpoint as a follow-up job, as `--then eval` would have."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Evaluate a finished run's checkpoint as a follow-up job.",
)


@app.command("eval")
def evaluate(
    job: Annotated[str, typer.Argument(help="job id, any unambiguous prefix of one, or the experiment name "
                                            "(its newest run)")],
    benchmarks: Annotated[str, typer.Option("--benchmarks", help="comma-separated suites to run instead of the "
                                                                 "experiment's eval.suites, e.g. gsm8k,mmlu")] = "",
    profile: Annotated[str, typer.Option("--profile", help="run the eval on this profile (default: the run's)")] = "",
    wait: Annotated[bool, typer.Option("--wait", help="wait until the eval job ends; exit 0 only if it succeeded")]
    = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the follow-up job as JSON")] = False,
) -> None:
    """Queue the recipe's eval step on a succeeded run, starting from its latest checkpoint; exit 1 when the console
    refuses (not yours, not succeeded, no checkpoint, no eval action)."""
    from starforge.cli._followup import request_followup

    suites = [name.strip() for name in benchmarks.split(",") if name.strip()] if benchmarks else None
    request_followup(job, "eval", as_json=as_json, benchmarks=suites, profile=profile, wait=wait)
