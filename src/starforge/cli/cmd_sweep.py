"""`sf sweep`: submit one job per hyperparameter point as one sweep (one admission decision), list sweeps, and show a
sweep's runs ranked by a metric.

Shape: `sf sweep EXP …` is short for `sf sweep run EXP …` (an experiment named like a subcommand needs the long
form); `sf sweep show ID` and `sf sweep ls` are the other subcommands. Each point's JobSpec is built exactly as
`sf submit` builds one, with the point's values appended to `--set` (so they are typed as `--set` types them); the
bundle is packed once, and `POST /api/sweeps` admits every point or none.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from starforge.cli._output import EXIT_USAGE, Output, counted

if TYPE_CHECKING:
    from starforge.contract import Problem

_SUBCOMMANDS_HELP = "Submit a hyperparameter sweep as one decision (sf sweep EXP …), list sweeps, show one ranked."


class _RunByDefault(TyperGroup):
    """A group whose first argument, when it is not a subcommand, starts `run` (`sf sweep EXP …`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_RunByDefault, add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False,
                  no_args_is_help=True, help=_SUBCOMMANDS_HELP)

JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object")]


def _usage(out: Output, problems: list[Problem]) -> NoReturn:
    """A malformed --grid/--range/--random: every problem at once, exit 2."""
    if out.as_json:
        out.emit({"ok": False, "title": "The sweep's points are malformed", "problems": [p.to_dict() for p in problems]})
    else:
        out.problems("The sweep's points are malformed; nothing was submitted", problems)
    raise typer.Exit(EXIT_USAGE)


def _points_table(out: Output, jobs: list[dict[str, Any]], keys: list[str]) -> str:
    rows = [[index, *(job.get("params", {}).get(k, "") for k in keys), job.get("job_id") or "-",
             job.get("status") or ("queued" if job.get("queued") else "")] for index, job in enumerate(jobs)]
    return out.table(rows, ["#", *keys, "job", "status"])


@app.command("run")
def run(
    exp: Annotated[str, typer.Argument(help="experiment name or path (experiments/<name>)")],
    profile: Annotated[list[str] | None, typer.Option(
        "--profile", "-p", metavar="[ROLES=]NAME[:GPUS]", help="a profile of the console's registry, as for "
                                                                "`sf submit` (repeat for several pools)")] = None,
    grid: Annotated[list[str] | None, typer.Option(
        "--grid", metavar="KEY=V1,V2", help="an axis of the grid: every combination of the axes is a point "
                                             "(repeatable)")] = None,
    random_count: Annotated[int, typer.Option("--random", metavar="N", min=0,
                                              help="sample N points in the --range ranges (crossed with the grid)")] = 0,
    range_: Annotated[list[str] | None, typer.Option(
        "--range", metavar="KEY=LO:HI[:log]", help="a range to sample, uniform or log-uniform (:log); int parameters "
                                                   "get integers (repeatable)")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", metavar="KEY=VALUE", help="a value every point shares, typed (repeatable)")] = None,
    max_parallel: Annotated[int, typer.Option("--max-parallel", metavar="K", min=0,
                                              help="at most K runs of the sweep active at once (0: no limit)")] = 0,
    seed: Annotated[int | None, typer.Option("--seed", help="seed of --random (printed when not given)")] = None,
    image: Annotated[str, typer.Option("--image", help="container image override (custom recipes need one)")] = "",
    model: Annotated[str, typer.Option("--model", help="base model, as for `sf submit`")] = "",
    init_from: Annotated[str, typer.Option("--init-from", help="start from run/<run_id>/<kind>[@step=N]")] = "",
    train_dataset: Annotated[str, typer.Option("--train-dataset", metavar="REF[:PATH]",
                                               help="training dataset <owner>/<name>@<version>[:FILE]")] = "",
    val_dataset: Annotated[str, typer.Option("--val-dataset", metavar="REF[:PATH]",
                                             help="validation dataset <owner>/<name>@<version>[:FILE]")] = "",
    allow_dirty: Annotated[bool, typer.Option("--allow-dirty", help="submit with uncommitted changes")] = False,
    allow_pending: Annotated[bool, typer.Option("--allow-pending",
                                                help="let runs no capacity of the console serves wait (pending) "
                                                     "instead of being refused")] = False,
    max_restarts: Annotated[int | None, typer.Option(
        "--max-restarts", metavar="N", min=0,
        help="each run, after a failure, starts again by itself from its latest checkpoint, up to N times "
             "(default 0; the console caps N)")] = None,
    no_validate: Annotated[bool, typer.Option("--no-validate", help="skip the local hyperparameter checks (the "
                                                                    "console still runs them)")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="ask the console's admission for every point; submit "
                                                            "nothing")] = False,
    catalog: Annotated[str | None, typer.Option("--catalog", help="recipe tree to use instead of the built-in "
                                                                  "catalog")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Submit one job per point as one sweep; exit 0 submitted (or --dry-run admitted), 1 refused, 2 usage."""
    from starforge.cli._lab import lab_root, load_catalog_or_abort
    from starforge.cli._submitting import session
    from starforge.lab import SubmitOptions
    from starforge.lab.sweep_points import parse_grid, parse_ranges

    out = Output(as_json=as_json)
    axes, problems = parse_grid(grid or ())
    ranges, range_problems = parse_ranges(range_ or ())
    if problems or range_problems:
        _usage(out, problems + range_problems)
    if not profile:
        out.abort("no --profile given", hint="pass --profile <name>[:gpus]; `sf status` lists the console's profiles",
                  code=EXIT_USAGE)
    lab = lab_root(out)
    cat = load_catalog_or_abort(out, catalog)  # an unknown experiment is refused by the first build, with its hint
    options = SubmitOptions(profiles=tuple(profile), sets=tuple(set_ or ()), image=image, init_from=init_from,
                            train_dataset=train_dataset, val_dataset=val_dataset, allow_dirty=allow_dirty,
                            validate=not no_validate, model=model)
    drawn = seed if seed is not None else random.SystemRandom().randrange(2**31)
    with session(out) as console:
        _sweep(out, console, lab, exp, options, cat, axes=axes, ranges=ranges, count=random_count, seed=drawn,
               max_parallel=max_parallel, allow_pending=allow_pending, dry_run=dry_run, max_restarts=max_restarts)


def _sweep(out: Output, console: Any, lab: Any, exp: str, options: Any, cat: Any, *, axes: Any, ranges: Any,
           count: int, seed: int, max_parallel: int, allow_pending: bool, dry_run: bool,
           max_restarts: int | None = None) -> None:
    from starforge.cli._submitting import (
        handshake,
        refuse,
        refuse_unbuilt,
        registry_of,
        sync_extensions,
        warn_all,
    )
    from starforge.lab import Sweep, build_submission, exp_label

    registry = registry_of(console)

    def confirm(base: Any) -> None:  # the console's steps before the bundle is packed
        if not out.as_json:
            warn_all(out, base.warnings)
        sync_extensions(out, console)
        handshake(out, console, base, exp_label(lab / base.exp))

    sub = build_submission(lab, exp, options, profiles=registry, catalog=cat, sweep=Sweep(axes, ranges, count, seed),
                           pack="none" if dry_run else "bundle", confirm=None if dry_run else confirm)
    if sub.stage == "points":
        _usage(out, sub.problems)
    refuse_unbuilt(out, sub)
    assert sub.built is not None
    if dry_run and not out.as_json:
        warn_all(out, sub.built.warnings)
    points = [dict(p.params) for p in sub.points]
    built = [p.built for p in sub.points]
    keys = list(dict.fromkeys(k for p in points for k in p))
    if dry_run:
        _dry_run(out, console, points, built, keys, allow_pending)
        return
    if sub.stage == "bundle" or sub.bundle is None:
        packed = sub.packed
        refuse(out, "The bundle was refused; nothing was uploaded", sub.problems,
               packed.warnings if packed is not None else ())
    _submit(out, console, sub.built, points, built, sub.bundle, keys, seed=seed if count else None,
            max_parallel=max_parallel, allow_pending=allow_pending, max_restarts=max_restarts)


def _submit(out: Output, console: Any, base: Any, points: list[dict[str, str]], built: list[Any], data: bytes,
            keys: list[str], *, seed: int | None, max_parallel: int, allow_pending: bool,
            max_restarts: int | None = None) -> None:
    from starforge.cli._submitting import restarts_meta
    from starforge.client import Rejected

    extra: dict[str, Any] = base.provenance.to_meta() if base.provenance is not None else {}
    if base.job is not None and base.job.metadata.project:
        extra["project"] = base.job.metadata.project
    extra.update(restarts_meta(max_restarts))
    try:
        result = console.submit_sweep([{"params": p, "spec": b.spec} for p, b in zip(points, built, strict=True)],
                                      data, exp=base.exp, profile=base.profile, meta_extra=extra,
                                      max_parallel=max_parallel, allow_pending=allow_pending)
    except Rejected as exc:
        out.fail(exc, title="The console rejected the sweep")
    sweep_id = result.get("sweep_id", "")
    jobs = [j for j in result.get("jobs", []) if isinstance(j, dict)]
    out.emit({"ok": True, **result, **({"seed": seed} if seed is not None else {})},
             lambda _: _points_table(out, jobs, keys))
    queued = sum(1 for j in jobs if j.get("queued"))
    limit = f", at most {max_parallel} at a time" if max_parallel else ""
    seeded = f" (--seed {seed})" if seed is not None else ""
    runs = counted(len(jobs), "run")
    out.success(f"Submitted sweep {sweep_id}: {runs} of {base.exp} on {base.profile}{limit}{seeded}"
                + (f"; {queued} queued" if queued else ""))
    out.hint(f"sf sweep show {sweep_id}")
    out.hint(f"sf job ls --sweep {sweep_id}")


def _dry_run(out: Output, console: Any, points: list[dict[str, str]], built: list[Any], keys: list[str],
             allow_pending: bool) -> None:
    from starforge.lab import at_point

    verdicts = [console.check(b.spec or {}, b.profile, allow_pending=allow_pending) for b in built]
    problems = [q for i, (p, v) in enumerate(zip(points, verdicts, strict=True)) for q in at_point(i, p, v.problems)]
    if problems:
        from starforge.cli._submitting import refuse

        refuse(out, "Dry run: the sweep would be rejected; nothing was submitted", problems, dry_run=True)
    rows = [{"params": p, "status": "admitted"} for p in points]
    out.emit({"ok": True, "dry_run": True, "jobs": rows}, lambda _: _points_table(out, rows, keys))
    out.success(f"Dry run: {'all ' if len(points) > 1 else ''}{counted(len(points), 'point')} would be admitted; "
                "nothing was submitted")


def _best_mark(run: dict[str, Any]) -> str:
    return "★" if run.get("best") else ""


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "-" if value is None else str(value)


@app.command("show")
def show(
    sweep_id: Annotated[str, typer.Argument(help="the sweep id `sf sweep` printed (sf sweep ls lists them)")],
    metric: Annotated[str, typer.Option("--metric", help="rank by this metric (default: the recipe's first "
                                                         "primary metric); bench/<suite>/<metric> ranks by a "
                                                         "benchmark score (`sf bench compare`)")] = "",
    sort: Annotated[str, typer.Option("--sort", metavar="COLUMN", help="order the table by this column (a "
                                                                       "parameter, a metric, status or job)")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Show each run's values, status and final metrics, ranked by the metric, the best run marked ★."""
    from starforge.cli.cmd_job import console_session

    out = Output(as_json=as_json)
    with console_session(out) as console:
        found = console.sweep(sweep_id, metric)
    runs = [r for r in found.get("runs", []) if isinstance(r, dict)]
    keys = [k for k in found.get("keys", []) if isinstance(k, str)]
    metrics = sorted({m for r in runs for m in r.get("metrics", {})})
    chosen = str(found.get("metric") or "")
    metric_cols = [chosen, *(m for m in metrics if m != chosen)] if chosen else metrics
    headers = ["best", "rank", "job", "status", *keys, *metric_cols]
    if sort and sort not in headers:
        out.abort(f"no column {sort!r}", hint=f"sort by one of {', '.join(headers[2:])}", code=EXIT_USAGE)
    rows = [[_best_mark(r), _fmt(r.get("rank")), r.get("job_id"), r.get("status"),
             *(_fmt(r.get("params", {}).get(k)) for k in keys), *(_fmt(r.get("metrics", {}).get(m)) for m in metric_cols)]
            for r in runs]
    if sort:
        column = headers.index(sort)
        rows.sort(key=lambda row: _sort_key(row[column]), reverse=sort in metric_cols and
                  found.get("direction") != "lower")

    def human(_: Any) -> str:
        return out.table(rows, headers) if rows else "No runs yet."

    out.emit(found, human)
    direction = found.get("direction")
    if not as_json and chosen:
        best = found.get("best")
        order = {"higher": "higher is better", "lower": "lower is better"}.get(str(direction), "no better direction")
        out.info(f"ranked by {chosen} ({order})" + (f"; best run {best}" if best else ""))


def _sort_key(cell: Any) -> tuple[int, float, str]:
    try:
        return (0, float(cell), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(cell))


@app.command("ls")
def ls(
    limit: Annotated[int, typer.Option("-n", "--limit", min=1, max=1000, help="how many of the newest sweeps")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List your sweeps, newest first, with their runs counted by status."""
    from starforge.cli.cmd_job import console_session

    out = Output(as_json=as_json)
    with console_session(out) as console:
        sweeps = console.sweeps(limit)
    rows = [[s.get("sweep_id"), s.get("exp"), s.get("jobs"), s.get("max_parallel") or "-",
             ", ".join(f"{n} {status}" for status, n in sorted(s.get("statuses", {}).items()))] for s in sweeps]
    out.emit({"sweeps": sweeps}, lambda _: out.table(rows, ["sweep", "exp", "runs", "parallel", "statuses"])
             if rows else "No sweeps yet.")
