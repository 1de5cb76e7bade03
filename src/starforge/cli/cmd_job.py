"""`sf job`: list, inspect, follow and control your jobs; ids accept any unambiguous prefix or the experiment name."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from starforge.cli._job_text import age, control_said, reason, status_text
from starforge.cli._output import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, Output, counted, human_size

if TYPE_CHECKING:
    from starforge.client import Console, Job, LogEvent, Metrics

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Follow and control jobs (ls, status, logs, metrics, artifacts, spec, diff, stop, pause, resume, retry, "
         "cancel-all).",
)

EXIT_INTERRUPTED = 130
_STYLES = {"succeeded": "green", "running": "cyan", "failed": "red", "error": "red", "queued": "yellow",
           "pending": "yellow", "submitted": "yellow", "paused": "yellow", "stopped": "dim", "cancelled": "dim",
           "terminated": "dim"}
_SPARK = "▁▂▃▄▅▆▇█"
_SPARK_ASCII = "_.-=+*#@"

JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
IdArg = Annotated[str, typer.Argument(help="job id, any unambiguous prefix of one, or the experiment name")]


# ---- shared with `sf status` ------------------------------------------------------------------------------------

@contextmanager
def console_session(out: Output) -> Iterator[Console]:
    """Yield a client of the configured console; any `ConsoleError` is rendered by `Output.fail` (exit 1)."""
    from starforge.client import Console, ConsoleError

    try:
        with Console.from_home() as console:
            yield console
    except ConsoleError as exc:
        out.fail(exc)


def render_table(out: Output, headers: Sequence[str], rows: Sequence[Sequence[Any]], status_col: int | None = None) -> str:
    """Return a table: Rich on a terminal (colour unless NO_COLOR), plain aligned text otherwise."""
    if not sys.stdout.isatty():
        return out.table(rows, headers)
    from rich.box import SIMPLE_HEAD
    from rich.console import Console as RichConsole
    from rich.table import Table
    from rich.text import Text

    table = Table(box=SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold" if out.colour_out else "")
    for header in headers:
        table.add_column(header.upper())
    for row in rows:
        cells = []
        for index, cell in enumerate(row):
            text = "" if cell is None else str(cell)
            style = _STYLES.get(text, "") if index == status_col and out.colour_out else ""
            cells.append(Text(text, style=style))
        table.add_row(*cells)
    buffer = io.StringIO()
    RichConsole(file=buffer, force_terminal=out.colour_out, no_color=not out.colour_out, highlight=False,
                width=shutil.get_terminal_size().columns).print(table)
    return buffer.getvalue().rstrip()


def jobs_table(out: Output, jobs: Sequence[Job]) -> str:
    """Return the job list table; an ATTEMPTS column appears when the console counts them, a PIPELINE column when
    any row carries `pipeline`."""
    pipeline = any(j.pipeline for j in jobs)
    attempts = any(j.attempts is not None for j in jobs)
    headers = (["id", "name", "status", "gpus"] + (["attempts"] if attempts else []) + ["submitted"]
               + (["pipeline"] if pipeline else []))
    rows = [[j.ref, j.name or j.exp_name, j.status or "?", j.requested_gpus]
            + ([j.attempts if j.attempts is not None else "-"] if attempts else []) + [age(j.submitted_at)]
            + ([j.pipeline_progress] if pipeline else []) for j in jobs]
    return render_table(out, headers, rows, status_col=2)


# ---- commands -------------------------------------------------------------------------------------------------

@app.command("ls")
def ls(
    all_jobs: Annotated[bool, typer.Option("--all", help="list up to 200 jobs")] = False,
    limit: Annotated[int, typer.Option("-n", "--limit", min=1, max=200, help="how many of the newest jobs")] = 15,
    status: Annotated[list[str] | None, typer.Option(
        "--status", help="only jobs in this status (repeat, or comma-separated: running,queued)")] = None,
    exp: Annotated[str, typer.Option("--exp", help="only jobs of this experiment (its name or path)")] = "",
    since: Annotated[str, typer.Option(
        "--since", help="only jobs submitted since: a duration (30m, 2h, 3d, 1w) or a date (2026-12-01)")] = "",
    sweep: Annotated[str, typer.Option("--sweep", help="only the jobs of this sweep (`sf sweep ls`)")] = "",
    as_json: JsonOpt = False,
) -> None:
    """List your jobs, newest first; --status, --exp, --since and --sweep narrow the list (filtered by the console)."""
    from starforge.cli._since import parse_since

    out = Output(as_json=as_json)
    statuses = tuple(part.strip() for item in status or () for part in item.split(",") if part.strip())
    after = parse_since(since, out) if since else None
    filtered = bool(statuses or exp or since or sweep)
    with console_session(out) as console:
        jobs = console.jobs(limit=limit, all=all_jobs, statuses=statuses, exp=exp, since=after, sweep=sweep)
    out.emit({"jobs": [dict(j.raw) for j in jobs]}, lambda _: jobs_table(out, jobs) if jobs else None)
    if not jobs and not as_json:
        if filtered:
            out.info("No jobs match.")
            out.hint("drop a filter, or list everything with `sf job ls --all`")
        else:
            out.info("No jobs yet.")
            out.hint("submit one with `sf submit <exp> --profile <name>[:gpus]`")


def resolve_job(out: Output, console: Console, handle: str, doing: str) -> Job:
    """Return the job `handle` names (`Console.pick_job`: an experiment or job name shared by several jobs names
    the newest), saying on stderr which one was taken when the name had several."""
    found = console.pick_job(handle)
    job = found.job
    assert job is not None  # `pick_job` raises when the handle names no job
    if found.by_name and len(found.matches) > 1:
        out.info(f"{handle!r} has {len(found.matches)} jobs; {doing} the newest, {job.ref} ({job.status}, "
                 f"submitted {age(job.submitted_at)})")
    return job


@app.command("status")
def status(job_id: IdArg, as_json: JsonOpt = False) -> None:
    """Show one job: status and why, its place while it waits, its attempts (and each of them when there were
    several)."""
    out = Output(as_json=as_json)
    with console_session(out) as console:
        job = console.job_detail(resolve_job(out, console, job_id, "showing").ref)  # with its place in the queue
    out.emit(dict(job.raw), lambda _: status_text(job, lambda headers, rows: render_table(out, headers, rows)))


def _final_status(console: Console, job: Job, end: LogEvent) -> tuple[str, str]:
    """Return the job's final status (from the `end` event's data when it names one, else from the job row) and
    its reason (from the job row, read once the stream has ended; "" when the console gives none)."""
    from starforge.client import TERMINAL, ConsoleError

    data = end.data.strip()
    try:
        parsed = json.loads(data)
    except ValueError:
        parsed = None
    status = parsed.get("status") if isinstance(parsed, dict) else None
    try:
        row: Job | None = console.job(job.ref)
    except ConsoleError:
        row = None
    why = reason(row) if row is not None else ""
    if isinstance(status, str):
        return status.lower(), why
    if data.lower() in TERMINAL:
        return data.lower(), why
    return (row.status if row is not None else ""), why


@app.command("logs")
def logs(
    job_id: Annotated[str, typer.Argument(help="job id, prefix or experiment name (default: your newest job)")] = "",
    tail: Annotated[int, typer.Option("-n", "--tail", min=0, help="start with the last N lines (0: everything)")] = 2000,
    no_follow: Annotated[bool, typer.Option("--no-follow", help="print the log as it is now and return")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object per event")] = False,
) -> None:
    """Follow a job's logs until it ends; exit 0 when it succeeded, 1 otherwise, 130 on Ctrl-C (the job keeps running).

    An experiment name with several jobs follows its newest. With --no-follow: print the log as it is now; exit 0
    while the job is still going, else as above."""
    out = Output(as_json=as_json)
    final = reason = ""
    with console_session(out) as console:
        if job_id:
            job = resolve_job(out, console, job_id, "following" if not no_follow else "showing")
        else:
            newest = console.jobs(limit=1)
            if not newest:
                out.abort("you have no jobs yet", hint="submit one with `sf submit <exp> --profile <name>`")
            job = newest[0]
        try:
            for event in console.logs(job.ref, tail=tail, live=not no_follow):
                if as_json:
                    out.emit({"event": event.event, "id": event.id, "data": event.data})
                elif event.event == "log":
                    sys.stdout.write(event.data)
                    sys.stdout.flush()
                elif event.event == "error":
                    sys.stdout.flush()
                    out.warn(event.data)
                if event.event == "end":
                    final, reason = _final_status(console, job, event)
        except KeyboardInterrupt:
            sys.stdout.flush()
            out.info("")
            out.info(f"Stopped following. The job {job.ref} keeps running.")
            out.hint(f"follow it again with `sf job logs {job.ref}`; stop it with `sf job stop {job.ref}`")
            raise typer.Exit(EXIT_INTERRUPTED) from None
    from starforge.client import SUCCEEDED, TERMINAL

    if as_json:
        out.emit({"event": "status", "id": None, "data": final, "reason": reason})
    if no_follow and final and final not in TERMINAL:
        out.info(f"Job {job.ref} is {final}; follow it with `sf job logs {job.ref}`")
        raise typer.Exit(EXIT_OK)
    if final in SUCCEEDED:
        out.success(f"Job {job.ref} {final}")
        raise typer.Exit(EXIT_OK)
    out.info(f"Job {job.ref} ended: {final or 'unknown status'}" + (f" — {reason}" if reason else ""))
    raise typer.Exit(EXIT_REFUSED)


@app.command("stop")
def stop(
    job_id: Annotated[str, typer.Argument(help="job id, any unambiguous prefix of one, or the experiment name")] = "",
    sweep: Annotated[str, typer.Option("--sweep", help="stop every unfinished job of this sweep instead")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Stop a job (or with --sweep ID every unfinished job of a sweep); stopping a finished job is not an error."""
    out = Output(as_json=as_json)
    if bool(job_id) == bool(sweep):
        out.abort("name a job or --sweep ID (one of the two)", hint="sf job stop <job> | sf job stop --sweep <id>",
                  code=EXIT_USAGE)
    if sweep:
        with console_session(out) as console:
            ended = console.stop_sweep(sweep)
        out.emit(ended, lambda _: None)
        out.success(f"Stopped {counted(ended.get('stopped', 0), 'job')} of sweep {sweep}")
        for failed in ended.get("failed") or []:
            out.warn(f"{failed.get('id')}: {failed.get('error')}")
        return
    with console_session(out) as console:
        job = resolve_job(out, console, job_id, "stopping")
        result = console.stop(job.ref)
    out.emit({"job": job.ref, "stopped": result.stopped, "status": result.status}, lambda _: None)
    if result.stopped:
        out.success(f"Stopped job {job.ref}" + (f" ({result.status})" if result.status else ""))
    else:
        out.info(f"Job {job.ref} had already finished ({result.status or 'unknown status'}).")


def _control(job_id: str, action: str, doing: str, as_json: bool) -> None:
    """Resolve the job, ask the console to `action` it, and say what happens (JSON: `{job, <done>, status}`)."""
    out = Output(as_json=as_json)
    with console_session(out) as console:
        job = resolve_job(out, console, job_id, doing)
        result = getattr(console, action)(job.ref)
    done = {"pause": "paused", "resume": "resumed", "retry": "retried"}[action]
    out.emit({"job": job.ref, done: result.done, "status": result.status}, lambda _: None)
    said = control_said(result)
    if said.success:
        out.success(said.text)
    else:
        out.info(said.text)
    if said.hint:
        out.hint(said.hint)


@app.command("pause")
def pause(job_id: IdArg, as_json: JsonOpt = False) -> None:
    """Pause a job: a waiting one is held at once; a running one saves a checkpoint, stops, and is held. It keeps
    its place in the queue and starts again, from that checkpoint, after `sf job resume`."""
    _control(job_id, "pause", "pausing", as_json)


@app.command("resume")
def resume(job_id: IdArg, as_json: JsonOpt = False) -> None:
    """Put a paused job back in the queue in its place (or cancel a pause still under way); it resumes from its
    latest checkpoint."""
    _control(job_id, "resume", "resuming", as_json)


@app.command("retry")
def retry(job_id: IdArg, as_json: JsonOpt = False) -> None:
    """Run a failed or stopped job again, as the same job (same id, run folder and artifacts), from its latest
    checkpoint."""
    _control(job_id, "retry", "retrying", as_json)


@app.command("cancel-all")
def cancel_all(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Stop every active job of your account."""
    out = Output(as_json=as_json)
    if not yes:
        if not sys.stdin.isatty():
            out.abort("refusing to stop all jobs without confirmation", hint="pass --yes", code=EXIT_USAGE)
        if not typer.confirm("Stop every active job of your account?"):
            out.abort("nothing was stopped")
    with console_session(out) as console:
        stopped = console.cancel_all()
    out.emit({"stopped": stopped}, lambda _: None)
    out.success(f"Stopped {stopped} job{'s' if stopped != 1 else ''}")


def sparkline(values: Sequence[float], width: int = 32, ascii_only: bool = False) -> str:
    """Return a one-line chart of `values`, averaged down to at most `width` characters."""
    points = [v for v in values if math.isfinite(v)]
    if not points:
        return ""
    if len(points) > width:
        n = len(points)
        buckets = [points[i * n // width: (i + 1) * n // width] for i in range(width)]
        points = [sum(bucket) / len(bucket) for bucket in buckets]
    chars = _SPARK_ASCII if ascii_only else _SPARK
    low, high = min(points), max(points)
    if high == low:
        return chars[len(chars) // 2] * len(points)
    scale = (len(chars) - 1) / (high - low)
    return "".join(chars[round((v - low) * scale)] for v in points)


def _ascii_only() -> bool:
    encoding = (getattr(sys.stdout, "encoding", None) or "ascii").lower()
    return bool(os.environ.get("SF_ASCII")) or "utf" not in encoding


def _metrics_text(out: Output, metrics: Metrics) -> str | None:
    if not metrics.series:
        return None
    plain = _ascii_only()
    rows = [
        [key, points[-1].step, f"{points[-1].value:.6g}", sparkline([p.value for p in points], ascii_only=plain)]
        for key, points in metrics.series.items()
    ]
    return render_table(out, ["metric", "step", "latest", "chart"], rows)


@app.command("metrics")
def metrics(job_id: IdArg, as_json: JsonOpt = False) -> None:
    """Show the latest value of every metric a job reported, with a small chart of its history."""
    out = Output(as_json=as_json)
    with console_session(out) as console:
        job = resolve_job(out, console, job_id, "showing")
        found = console.metrics(job.ref)
    data = {"job": job.ref, "metrics": {k: [{"step": p.step, "value": p.value, "ts": p.ts} for p in points]
                                        for k, points in found.series.items()}}
    out.emit(data, lambda _: _metrics_text(out, found))
    if not found.series and not as_json:
        out.info(f"Job {job.ref} has reported no metrics yet.")


@app.command("spec")
def spec(job_id: IdArg, as_json: JsonOpt = False) -> None:
    """Print the JobSpec the console admitted for a job (owner stamped)."""
    out = Output(as_json=as_json)
    with console_session(out) as console:
        job = resolve_job(out, console, job_id, "showing")
        admitted = console.jobspec(job.ref)
    out.emit(admitted, lambda d: json.dumps(d, indent=2, ensure_ascii=False))


@app.command("diff")
def diff(
    a: Annotated[str, typer.Argument(help="the first job (id, prefix or experiment name)")],
    b: Annotated[str, typer.Argument(help="the second job")],
    as_json: JsonOpt = False,
) -> None:
    """Explain why two of your runs differ: hyperparameters and merged config, JobSpec fields, lab commit (with a
    per-file stat of the two bundles), recipe, runtime and image, data, seeds, placement; then their final metrics.
    Exits 0 whether or not they differ."""
    from starforge.cli._diff_text import diff_text
    from starforge.cli._output import colour_enabled

    out = Output(as_json=as_json)
    with console_session(out) as console:
        first = resolve_job(out, console, a, "comparing")
        second = resolve_job(out, console, b, "comparing")
        found = console.diff(first.ref, second.ref)
    out.emit(found, lambda d: diff_text(d, colour=colour_enabled(sys.stdout)))


def _artifacts_text(out: Output, rows: Sequence[dict[str, Any]]) -> str | None:
    if not rows:
        return None
    table = [[r.get("kind", ""), "-" if r.get("step") is None else r.get("step"), human_size(r.get("size_bytes")),
              r.get("path", "")] for r in rows]
    return render_table(out, ["kind", "step", "size", "path"], table)


def _warn_if_it_dirties_a_lab(out: Output, target: Path) -> None:
    """Say so when files downloaded to `target` make a lab's tree dirty (`sf submit` would then refuse)."""
    from starforge.lab import lab_dirtied_by

    root = lab_dirtied_by(target)
    if root is not None:
        where = target.resolve().relative_to(root).as_posix()
        out.warn(f"{where}/ is in the lab {root} and git does not ignore it: `sf submit` refuses a lab with "
                 f"uncommitted files; add `{where}/` to .gitignore, or download under downloads/ (ignored in labs "
                 f"made by `sf init`)")


@app.command("artifacts")
def artifacts(
    job_id: IdArg,
    download: Annotated[str, typer.Option("--download", metavar="DIR",
                                          help="fetch every artifact the console holds into DIR (its files keep "
                                               "their paths inside the run's output folder)")] = "",
    as_json: JsonOpt = False,
) -> None:
    """List the artifacts a job registered (kind, step, size, path); with --download, fetch them (owner or admin)."""
    out = Output(as_json=as_json)
    files: list[str] = []
    with console_session(out) as console:
        job = resolve_job(out, console, job_id, "listing")
        rows = console.artifacts(job.ref)
        if download:
            target = Path(download)
            if target.exists() and (not target.is_dir() or any(target.iterdir())):
                out.abort(f"{target} exists and is not an empty folder", hint="download into a new folder",
                          code=EXIT_USAGE)
            # one archive of everything the console holds (remote artifacts and vanished files left out by it)
            files = console.download_artifact(job.ref, "", target)
            _warn_if_it_dirties_a_lab(out, target)
    body: dict[str, Any] = {"job": job.ref, "artifacts": rows}
    if download:
        body.update(download=str(download), files=files)
    out.emit(body, lambda _: _artifacts_text(out, rows))
    if as_json:
        return
    if not rows:
        out.info(f"Job {job.ref} has registered no artifacts.")
    if download:
        out.success(f"Downloaded {len(files)} file{'s' if len(files) != 1 else ''} into {download}")
