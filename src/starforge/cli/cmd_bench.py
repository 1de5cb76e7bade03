"""`sf bench`: run benchmark suites on a model as an evaluation job, list the suites the console offers, and compare
runs by their scores.

`sf bench run EXP` submits the lab's evaluation experiment EXP (made with `sf new EXP --method evalkit/benchmark`)
exactly as `sf submit` does, with the suites, limit and repeat count as its hyperparameters and the model as its
base model (`run:<id>`: that run's exported model, else its latest checkpoint, as `init_from`). `sf bench compare`
prints the console's comparison (`GET /api/benchmarks/compare`): the verdicts are the console's one rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from starforge.cli._output import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, Output

if TYPE_CHECKING:
    from starforge.client import Console

app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Run benchmark suites on a model (lm-eval), list the suites offered, compare runs' scores.")

JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object")]


@app.command("ls")
def list_suites(as_json: JsonOpt = False) -> None:
    """List the benchmark suites this console offers (builtin and published packs)."""
    from starforge.cli._bench_text import SUITE_HEADERS, suite_rows
    from starforge.cli.cmd_job import console_session

    out = Output(as_json=as_json)
    with console_session(out) as console:
        suites = console.benchmark_suites()
    out.emit({"suites": suites}, lambda _: out.table(suite_rows(suites), SUITE_HEADERS) if suites else None)
    if not suites and not as_json:
        out.info("This console offers no benchmark suites; an operator publishes packs with `sf plugin publish`")


@app.command("compare")
def compare(
    runs: Annotated[list[str], typer.Argument(help="run ids; the first is the baseline the others are judged "
                                                   "against")],
    as_json: JsonOpt = False,
) -> None:
    """Compare runs on every suite and metric they reported: mean, spread and n over repeats, and each run's
    verdict against the first (better/worse only beyond the evaluation's own variance, measured with --repeat)."""
    from starforge.cli._bench_text import COMPARE_HEADERS, compare_rows
    from starforge.cli.cmd_job import console_session

    out = Output(as_json=as_json)
    with console_session(out) as console:
        body = console.compare_benchmarks([r.strip() for r in runs if r.strip()])
    rows = compare_rows(body)
    out.emit(body, lambda _: out.table(rows, COMPARE_HEADERS) if rows else None)
    if not as_json and not rows:
        out.info("None of these runs reported a benchmark score")
    elif not as_json and any(r[-1] == "no variance measured" for r in rows):
        out.hint("a verdict needs the evaluation's own variance: run each with `sf bench run … --repeat 3`")


def _model_options(out: Output, console: Console, model: str) -> tuple[str, str]:
    """Return `(base model, init_from)` for a `--model` reference; `run:<id>` takes that run's exported model, else
    its latest checkpoint (exit 1 when the run is not yours or has neither)."""
    from starforge.client import NotFound
    from starforge.wire import RUN_MODEL_KINDS

    if not model.startswith("run:"):
        return model, ""
    run_id = model[len("run:"):].strip()
    try:
        kinds = {a.get("kind") for a in console.artifacts(run_id)}
    except NotFound:
        out.abort(f"model: no run {run_id!r} of yours", hint="`sf job ls` lists your runs; use run:<run_id>")
    for kind in RUN_MODEL_KINDS:  # what `run:<id>` names, as a service takes it
        if kind in kinds:
            return "", f"run/{run_id}/{kind}"
    out.abort(f"model: run {run_id} registered no exported model or checkpoint to evaluate",
              hint=f"`sf job artifacts {run_id}` lists what it registered; `sf export {run_id}` exports one")


@app.command("run")
def run(
    exp: Annotated[str, typer.Argument(help="the evaluation experiment (make it with `sf new EXP --method "
                                            "evalkit/benchmark`)")],
    model: Annotated[str, typer.Option("--model", "-m", help="run:<run_id> (its exported model, else its latest "
                                                             "checkpoint), a registered model owner/name@version, "
                                                             "a folder under the console's model_roots, or a hub "
                                                             "id")],
    suites: Annotated[str, typer.Option("--suites", help="comma-separated suites (`sf bench ls`)")],
    limit: Annotated[int, typer.Option("--limit", min=0, help="examples per suite (0: all)")] = 0,
    repeat: Annotated[int, typer.Option("--repeat", min=1, max=100,
                                        help="evaluate this many times with different seeds, to measure the "
                                             "evaluation's own variance (a comparison needs 2 or more)")] = 1,
    profile: Annotated[str, typer.Option("--profile", "-p", help="where it runs (default: the console's first "
                                                                 "profile; `sf status` lists them)")] = "",
    allow_dirty: Annotated[bool, typer.Option("--allow-dirty", help="submit with uncommitted changes")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="wait until the job ends; exit 0 only if it succeeded")]
    = False,
    as_json: JsonOpt = False,
) -> None:
    """Submit a benchmark job of EXP on a model; exit 0 submitted (with --wait: succeeded), 1 refused or failed."""
    from starforge.cli._followup import wait_for_end
    from starforge.cli._lab import lab_root, load_catalog_or_abort
    from starforge.cli._submitting import registry_of, session
    from starforge.cli.cmd_submit import _submit
    from starforge.lab import SubmitOptions, experiment_path

    out = Output(as_json=as_json)
    names = [s.strip() for s in suites.split(",") if s.strip()]
    if not names:
        out.abort("--suites names no suite", hint="e.g. --suites basic-arithmetic,basic-choice (`sf bench ls`)",
                  code=EXIT_USAGE)
    lab = lab_root(out)
    exp_dir, _rel, missing = experiment_path(lab, exp)
    if exp_dir is None:
        out.abort(missing[0].message, hint=f"make it with `sf new {exp} --method evalkit/benchmark`", code=EXIT_USAGE)
    cat = load_catalog_or_abort(out, None)
    sets = [f"suites={','.join(names)}"] + ([f"limit={limit}"] if limit else []) + (
        [f"repeat={repeat}"] if repeat > 1 else [])
    with session(out) as console:
        base, init_from = _model_options(out, console, model.strip())
        chosen = profile or next((p.name for p in registry_of(console)), "")
        options = SubmitOptions(profiles=(chosen,), sets=tuple(sets), model=base, init_from=init_from,
                                allow_dirty=allow_dirty)
        job_id = _submit(out, console, lab, exp, exp_dir, options, cat)
        final = wait_for_end(console, job_id) if wait else ""
    if final:
        out.info(f"job {job_id} {final}")
        if final == "succeeded":
            out.hint(f"its scores: `sf job status {job_id}`; compare runs with `sf bench compare {job_id} RUN`")
        else:
            raise typer.Exit(EXIT_REFUSED)
    raise typer.Exit(EXIT_OK)
