"""`sf submit`: build an experiment's JobSpec and bundle and submit them (wire-protocol §7.1), or check them.

The sequence: `GET /api/cluster/status` → `lab.build_submission` (`build_jobspec`, then, as its confirm step,
`GET /api/extensions?source=user` → `GET /api/recipes` → the client handshake; `.starforge/jobspec.json`; the
bundle) → `POST /api/jobs` (or, with --dry-run, `POST /api/admission/check`). Nothing is uploaded when any step
before the last refuses.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from starforge.cli._lab import lab_root, load_catalog_or_abort
from starforge.cli._output import EXIT_USAGE, Output, slots
from starforge.cli._submitting import (
    handshake,
    refuse,
    refuse_unbuilt,
    registry_of,
    restarts_meta,
    session,
    sync_extensions,
    warn_all,
)

if TYPE_CHECKING:

    from starforge.client import Console, SubmitResult
    from starforge.contract import JobSpec, Problem, ProfileEntry
    from starforge.lab import BuiltSpec, Submission, SubmitOptions
    from starforge.recipes import Catalog

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Build the JobSpec and bundle of an experiment and submit it.",
)


def _upgrade_lock(out: Output, exp_dir: Path, catalog: Catalog, framework_version: str) -> None:
    """`--upgrade-recipe`: rewrite the lock from the local catalog before anything else (the tree then changes)."""
    from starforge import __version__
    from starforge.lab import UpgradeError, apply_upgrade, plan_upgrade

    plan = plan_upgrade(exp_dir, catalog, __version__, framework_version=framework_version or None)
    if not plan.ok:
        out.problems(f"The lock was not upgraded: {plan.state} — {plan.message}", plan.problems)
        out.abort("nothing was submitted", hint=f"`sf recipe status {exp_dir.name}` shows the lock")
    try:
        written = apply_upgrade([plan])
    except UpgradeError as exc:
        out.abort(str(exc))
    if written:
        out.info(f"upgraded {exp_dir.name}/recipe.lock.json to the installed catalog ({plan.state} → current)")


def _submit_with_retry(console: Console, sub: Submission, *, allow_pending: bool = False,
                       max_restarts: int | None = None) -> SubmitResult:
    """POST once; on a dropped connection retry once with the same Idempotency-Key (never a second job)."""
    from starforge.client import Unavailable

    key = str(uuid.uuid4())
    meta = {**sub.meta, **restarts_meta(max_restarts)}
    for attempt in (1, 2):
        try:
            return console.submit(sub.spec or {}, sub.bundle, exp=sub.exp, profile=sub.profile, meta_extra=meta,
                                  idempotency_key=key, allow_pending=allow_pending)
        except Unavailable as exc:
            if attempt == 2 or exc.status is not None:
                raise
    raise AssertionError("unreachable")


# ---- the command ----------------------------------------------------------------------------------------------

@app.command()
def submit(
    exp: Annotated[str, typer.Argument(help="experiment name or path (experiments/<name>, smoke/<name>)")],
    profile: Annotated[list[str] | None, typer.Option(
        "--profile", "-p", metavar="[ROLES=]NAME[:GPUS]",
        help="a profile of the console's registry, with a GPU count and roles (repeat for several pools)")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", metavar="KEY=VALUE", help="hyperparameter value, typed (repeatable)")] = None,
    image: Annotated[str, typer.Option("--image", help="container image override (custom recipes need one)")] = "",
    observability_url: Annotated[str, typer.Option("--observability-url",
                                                   help="tracker URL (recipes with external observability)")] = "",
    init_from: Annotated[str, typer.Option("--init-from", help="start from run/<run_id>/<kind>[@step=N]")] = "",
    model: Annotated[str, typer.Option("--model", help="base model: an HF id, a registered model "
                                                        "<owner>/<name>@<version> (`sf model ls`), or a folder of "
                                                        "the console machine under its model_roots "
                                                        "(spec.model.base)")] = "",
    corpus: Annotated[str, typer.Option("--corpus", help="reference corpus <owner>/<name>[@version]")] = "",
    train_dataset: Annotated[str, typer.Option("--train-dataset", metavar="REF[:PATH]",
                                               help="training dataset <owner>/<name>@<version>, optionally :FILE "
                                                    "inside it (`sf dataset ls`)")] = "",
    val_dataset: Annotated[str, typer.Option("--val-dataset", metavar="REF[:PATH]",
                                             help="validation dataset <owner>/<name>@<version>[:FILE]")] = "",
    plugin: Annotated[list[str] | None, typer.Option(
        "--plugin", metavar="ID@VERSION", help="a plugin pinned in the experiment's plugins.lock.json (repeatable)")] = None,
    then: Annotated[list[str] | None, typer.Option(
        "--then", metavar="ACTION", help="after success: export or eval (repeatable)")] = None,
    allow_dirty: Annotated[bool, typer.Option("--allow-dirty", help="submit with uncommitted changes")] = False,
    allow_pending: Annotated[bool, typer.Option("--allow-pending",
                                                help="let a job no capacity of the console serves wait (pending) "
                                                     "instead of being refused")] = False,
    max_restarts: Annotated[int | None, typer.Option(
        "--max-restarts", metavar="N", min=0,
        help="after a failure, start the job again by itself, from its latest checkpoint, up to N times "
             "(default 0; the console caps N)")] = None,
    no_validate: Annotated[bool, typer.Option("--no-validate",
                                              help="skip hyperparameter, lifecycle and role checks locally "
                                                   "(the console still runs them)")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="ask the console's admission; submit nothing")] = False,
    framework_version: Annotated[str, typer.Option("--framework-version",
                                                   help="must equal the locked version (see --upgrade-recipe)")] = "",
    upgrade_recipe: Annotated[bool, typer.Option("--upgrade-recipe",
                                                 help="rewrite the lock from the installed catalog first")] = False,
    catalog: Annotated[str | None, typer.Option("--catalog", help="recipe tree to use instead of the built-in "
                                                                  "catalog")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Submit the experiment; exit 0 submitted or queued (or --dry-run admitted), 1 refused, 2 usage."""
    from starforge.lab import SubmitOptions, experiment_path

    out = Output(as_json=as_json)
    lab = lab_root(out)
    exp_dir, _rel, missing = experiment_path(lab, exp)
    if exp_dir is None:
        out.abort(missing[0].message, hint=missing[0].hint, code=EXIT_USAGE)
    if not profile:
        out.abort("no --profile given", hint="pass --profile <name>[:gpus]; `sf status` lists the console's profiles",
                  code=EXIT_USAGE)
    cat = load_catalog_or_abort(out, catalog)
    if upgrade_recipe:
        _upgrade_lock(out, exp_dir, cat, framework_version)
    options = SubmitOptions(
        profiles=tuple(profile), sets=tuple(set_ or ()), image=image, observability_url=observability_url,
        init_from=init_from, corpus=corpus, train_dataset=train_dataset, val_dataset=val_dataset,
        plugins=tuple(plugin or ()),
        then=tuple(then or ()), allow_dirty=allow_dirty, validate=not no_validate,
        framework_version=framework_version, model=model,
    )
    if dry_run:
        _dry_run(out, lab, exp, exp_dir, options, cat, allow_pending=allow_pending)
        return
    with session(out) as console:
        _submit(out, console, lab, exp, exp_dir, options, cat, allow_pending=allow_pending, max_restarts=max_restarts)


def _submit(out: Output, console: Console, lab: Path, exp: str, exp_dir: Path, options: SubmitOptions,
            catalog: Catalog, *, allow_pending: bool = False, max_restarts: int | None = None) -> str:
    """Build, check and submit the experiment, print the job (JSON or text) and return its id; exit 1 refused."""
    from starforge.client import Forbidden, Rejected
    from starforge.lab import build_submission, exp_label

    registry = registry_of(console)

    def confirm(built: BuiltSpec) -> None:  # the console's steps before anything is written or packed
        if not out.as_json:
            warn_all(out, built.warnings)
        sync_extensions(out, console)
        handshake(out, console, built, exp_label(exp_dir))

    sub = build_submission(lab, exp, options, profiles=registry, catalog=catalog, confirm=confirm, spec_file=True)
    refuse_unbuilt(out, sub)
    spec_file = str(sub.spec_file)
    packed = sub.packed
    if sub.stage == "bundle" or packed is None:
        refuse(out, "The bundle was refused; nothing was uploaded", sub.problems,
               packed.warnings if packed is not None else (), spec_file=spec_file)
    assert packed.data is not None and packed.info is not None and sub.built is not None
    built = sub.built
    if not out.as_json:
        warn_all(out, packed.warnings)
    try:
        result = _submit_with_retry(console, sub, allow_pending=allow_pending, max_restarts=max_restarts)
    except (Rejected, Forbidden) as exc:  # a quota, a profile the account may not use…: every field with its hint
        out.fail(exc, title="The console rejected the job", spec_file=spec_file)
    job_id = result.job_id
    out.emit({"ok": True, "job_id": job_id, "run_id": result.run_id, "queued": result.queued,
              "status": result.raw.get("status", ""), "message": result.message,
              "requested_gpus": result.requested_gpus, "profile": built.profile, "exp": built.exp,
              "spec_file": spec_file,
              "bundle": {"files": packed.info.files, "bytes": packed.info.bytes, "sha256": packed.info.sha256,
                         "allowed_secrets": packed.allowed_secrets},
              "warnings": list(result.warnings)}, lambda _: job_id)
    for warning in result.warnings:
        out.warn(warning)
    gpus = slots(result.requested_gpus, cpu=_on_cpu(registry, built.job))
    if result.queued and result.raw.get("status") == "pending":  # no capacity serves it (`--allow-pending`)
        out.info(f"Queued: {result.message}")
        out.info(f"  job {job_id} ({built.exp}, {gpus} on {built.profile}) waits until the console has capacity for "
                 f"it; `sf job status {job_id}` shows why and where it stands")
    elif result.queued:
        out.info(f"Queued: {result.message or 'waiting for capacity'}")
        out.info(f"  job {job_id} ({built.exp}, {gpus} on {built.profile}) starts by itself when capacity frees up")
    else:
        out.success(f"Submitted {built.exp} as job {job_id} ({gpus} on {built.profile})")
    out.hint(f"sf job logs {job_id}")
    return job_id


def _on_cpu(registry: list[ProfileEntry], job: JobSpec | None) -> bool:
    """Return True when every pool of the job is on a series the registry publishes as one without GPUs."""
    cpu = {entry.series or entry.name for entry in registry if entry.cpu}
    pools = job.spec.resources.pools if job is not None else ()
    return bool(pools) and all(pool.series in cpu for pool in pools)


# ---- --dry-run ------------------------------------------------------------------------------------------------

def _dry_run(out: Output, lab: Path, exp: str, exp_dir: Path, options: SubmitOptions, catalog: Catalog, *,
             allow_pending: bool = False) -> None:
    from starforge.client import ConfigError, Console, ConsoleError, NotLoggedIn, Unavailable

    try:
        with Console.from_home() as console:
            registry = registry_of(console)
            checked = _checked_online(out, console, lab, exp, exp_dir, options, catalog, registry, allow_pending)
    except (Unavailable, ConfigError, NotLoggedIn) as exc:
        out.info(f"offline: checked locally ({exc.title or exc.detail})")
        checked = _checked_offline(out, lab, exp, options, catalog)
    except ConsoleError as exc:  # a 401 or 403 is a real refusal, not "offline"
        out.fail(exc)
    _report_dry_run(out, checked)


def _checked_online(out: Output, console: Console, lab: Path, exp: str, exp_dir: Path, options: SubmitOptions,
                    catalog: Catalog, registry: list[ProfileEntry], allow_pending: bool = False) -> dict[str, Any]:
    from starforge.lab import build_submission, exp_label

    sub = build_submission(lab, exp, options, profiles=registry, catalog=catalog, pack="check", spec_file=True,
                           confirm=lambda built: handshake(out, console, built, exp_label(exp_dir)))
    refuse_unbuilt(out, sub)
    assert sub.built is not None and sub.built.job is not None and sub.spec is not None
    verdict = console.check(sub.spec, sub.profile, allow_pending=allow_pending)
    problems = list(sub.problems) + list(verdict.problems)
    return {"ok": verdict.ok and not problems, "offline": False, "profile": sub.profile,
            "requested_gpus": verdict.requested_gpus or sub.built.job.total_gpus,
            "on_cpu": _on_cpu(registry, sub.built.job), "spec": sub.spec, "spec_file": str(sub.spec_file),
            "files": _files(sub), "problems": problems, "warnings": list(sub.warnings) + list(verdict.warnings)}


def _checked_offline(out: Output, lab: Path, exp: str, options: SubmitOptions, catalog: Catalog) -> dict[str, Any]:
    from starforge.client import ConsoleError, ForgeHome
    from starforge.contract import Problem
    from starforge.lab import build_submission, offline_registry

    home = ForgeHome.from_env()
    try:
        server: str | None = home.resolve_server()
    except ConsoleError:
        server = None
    registry, cached = offline_registry(home.path, server, options.profiles)
    sub = build_submission(lab, exp, options, profiles=registry, catalog=catalog, pack="check", spec_file=True)
    refuse_unbuilt(out, sub)
    assert sub.built is not None and sub.built.job is not None
    note = ("profiles checked against the registry last seen on this console" if cached else
            "the console's profile registry is unknown: profile names and shapes were not checked")
    warnings = [*sub.warnings, Problem("profile", "offline", note)]
    return {"ok": not sub.problems, "offline": True, "profile": sub.profile,
            "requested_gpus": sub.built.job.total_gpus, "on_cpu": _on_cpu(registry, sub.built.job),
            "spec": sub.spec, "spec_file": str(sub.spec_file), "files": _files(sub), "problems": list(sub.problems),
            "warnings": warnings}


def _files(sub: Submission) -> list[str]:
    return list(sub.packed.files) if sub.packed is not None else []


def _report_dry_run(out: Output, checked: dict[str, Any]) -> None:
    problems: list[Problem] = checked["problems"]
    warnings: list[Problem] = checked["warnings"]
    where = "checked locally (offline)" if checked["offline"] else "the console's admission"
    if not checked["ok"]:
        refuse(out, f"Dry run: the job would be rejected ({where}); nothing was submitted", problems, warnings,
                dry_run=True, offline=checked["offline"], spec=checked["spec"], spec_file=checked["spec_file"])
    taken = slots(checked["requested_gpus"], cpu=checked.pop("on_cpu", False))
    out.emit({**checked, "dry_run": True, "problems": [], "warnings": [w.to_dict() for w in warnings]},
             lambda _: None)
    out.problems("", [], warnings)
    verdict = "passes every local check" if checked["offline"] else "would be admitted"
    out.success(f"Dry run: the job {verdict} ({taken} on {checked['profile']}); nothing was submitted")
    out.hint(f"the spec is in {checked['spec_file']}")
