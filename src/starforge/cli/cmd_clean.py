"""`sf clean EXP`: delete an experiment's checkpoints, exports and logs on the console (its finished runs' folders),
after a confirmation or with `--yes`; the job rows stay as history."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from starforge.cli._output import EXIT_USAGE, Output, counted, human_size

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Delete an experiment's checkpoints and logs on the console.",
)


def _human(data: dict[str, Any]) -> str:
    lines = [f"cleaned {data.get('exp')}: {counted(data.get('files', 0), 'file')} ({human_size(data.get('bytes'))}) of "
             f"{counted(len(data.get('cleaned') or []), 'finished job')} deleted"]
    for row in data.get("skipped") or []:
        lines.append(f"skipped {row.get('job_ref')} ({row.get('status')}): {row.get('reason')}")
    return "\n".join(lines)


@app.command()
def clean(
    exp: Annotated[str, typer.Argument(help="the experiment: its name or path (experiments/<name>)")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print what was deleted as JSON")] = False,
) -> None:
    """Delete the run folders (checkpoints, exports, logs) of your finished jobs of EXP; active jobs are skipped and
    listed. Not recoverable: asks first on a terminal, needs --yes otherwise (exit 2 without it)."""
    out = Output(as_json=as_json)
    if not yes:
        if not sys.stdin.isatty():
            out.abort(f"cleaning {exp} deletes its checkpoints and logs for good, and there is no terminal to ask on",
                      hint=f"confirm with `sf clean {exp} --yes`", code=EXIT_USAGE)
        if not typer.confirm(f"Delete the checkpoints and logs of every finished run of {exp}? This cannot be undone"):
            out.info("Nothing deleted.")
            raise typer.Exit(EXIT_USAGE)
    from starforge.cli.cmd_job import console_session

    with console_session(out) as console:
        done = console.clean(exp)
    out.emit(done, _human)
    for error in done.get("errors") or []:
        out.warn(f"not deleted: {error}")
