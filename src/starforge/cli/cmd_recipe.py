"""`sf recipe`: inspect experiments' recipe locks against the local catalog (status) and rewrite them (upgrade)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from starforge.cli._output import EXIT_REFUSED, EXIT_USAGE, Output, counted

if TYPE_CHECKING:
    from starforge.lab import LockInspection, UpgradePlan
    from starforge.recipes import Catalog

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Inspect and upgrade recipe locks (status, upgrade).",
)

_CATALOG_HELP = "recipe tree <framework>/<name>/recipe.yaml instead of the built-in catalog"


def _lab(out: Output) -> Path:
    from starforge.lab import LabNotFound, find_root

    try:
        return find_root()
    except LabNotFound as exc:
        out.abort(str(exc), hint="run it inside a lab, or `sf init` to create one", code=EXIT_USAGE)


def _catalog(out: Output, path: str | None) -> Catalog:
    from starforge.recipes import CatalogError, open_catalog

    try:
        return open_catalog(path, "manifest")
    except CatalogError as exc:
        out.abort(str(exc), hint="fix the manifests listed above", code=EXIT_REFUSED)
    except ValueError as exc:
        out.abort(str(exc), code=EXIT_USAGE)


def _experiments(out: Output, lab: Path, exp: str, all_: bool) -> list[Path]:
    from starforge.lab import current_experiment, locked_experiments, resolve_experiment

    if all_ and exp:
        out.abort("name one experiment or pass --all, not both", code=EXIT_USAGE)
    if all_:
        return locked_experiments(lab)
    found = resolve_experiment(lab, exp) if exp else current_experiment(lab)
    if found is None:
        what = f"no experiment {exp!r} in {lab}" if exp else "no experiment named"
        out.abort(what, hint="name one (experiments/<name> or smoke/<name>) or pass --all", code=EXIT_USAGE)
    return [found]


def _name(lab: Path, exp_dir: Path) -> str:
    try:
        return exp_dir.relative_to(lab).as_posix()
    except ValueError:
        return str(exp_dir)


def _diff_table(out: Output, diffs: list[tuple[str, str, str]], headers: list[str]) -> str:
    text = out.table([(f, a or "(none)", b or "(none)") for f, a, b in diffs], headers)
    return "\n".join("    " + line for line in text.splitlines())


def _inspection_dict(lab: Path, item: LockInspection, strict: bool) -> dict[str, Any]:
    return {
        "exp": _name(lab, item.exp_dir),
        "state": item.state,
        "label": item.label,
        "admits": item.admits_under(strict),
        "recipe": item.recipe_id,
        "framework_version": item.framework_version,
        "message": item.message,
        "diffs": [{"field": f, "locked": a, "current": b} for f, a, b in item.diffs],
    }


def _server_rows(out: Output, inspections: list[LockInspection]) -> dict[str, tuple[str, str]]:
    from starforge.client import Console, ConsoleError
    from starforge.recipes import compare_server_entry

    try:
        with Console.from_home() as console:
            payload = console.recipes()
    except ConsoleError as exc:
        out.fail(exc, hint=exc.hint or "run `sf login` first")
    rows = {}
    for item in inspections:
        if item.recipe is not None:
            rows[str(item.exp_dir)] = compare_server_entry(payload, item.recipe.id, item.recipe.version,
                                                           item.recipe.digest())
    return rows


@app.command("status")
def status(
    exp: Annotated[str, typer.Argument(help="experiment name or path (default: the one you are in)")] = "",
    all_: Annotated[bool, typer.Option("--all", help="every experiment with a lock under experiments/ and smoke/")] = False,
    server: Annotated[bool, typer.Option("--server", help="also compare with the console's published catalog")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="exit 1 unless every lock is current (any drift fails)")] = False,
    catalog: Annotated[str | None, typer.Option("--catalog", help=_CATALOG_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Show each lock's state and diffs; exit 0 when every lock admits (--strict: is current), 1 otherwise, 2 usage."""
    from starforge import __version__
    from starforge.lab import inspect_lock

    out = Output(as_json=as_json)
    lab = _lab(out)
    exps = _experiments(out, lab, exp, all_)
    cat = _catalog(out, catalog)
    inspections = [inspect_lock(d, cat, __version__) for d in exps]
    remote = _server_rows(out, inspections) if server else {}
    ok = all(i.admits_under(strict) for i in inspections)
    rows = []
    for item in inspections:
        row = _inspection_dict(lab, item, strict)
        if server:
            status_, message = remote.get(str(item.exp_dir), ("unknown", "no local recipe to compare"))
            row["server"] = {"status": status_, "message": message}
        rows.append(row)
    if as_json:
        out.emit({"ok": ok, "strict": strict, "experiments": rows})
    else:
        if not rows:
            out.line("no experiment has a recipe.lock.json")
        for row, item in zip(rows, inspections, strict=True):
            label = f" ({item.label})" if item.label and item.label != item.state else ""
            mark = "✓" if row["admits"] else "✗"
            what = f"  {item.recipe_id}" + (f"@{item.framework_version}" if item.framework_version else "")
            out.line(f"{mark} {row['exp']}  {item.state}{label}{what if item.recipe_id else ''}")
            if item.message:
                out.line(f"    {item.message}")
            if item.diffs:
                out.line(_diff_table(out, item.diffs, ["field", "locked", "current"]))
            if server:
                out.line(f"    console: {row['server']['message']}")
            if item.state not in ("current", "sdk_incompatible") and (item.state != "malformed" or item.legacy_method):
                out.hint(f"sf recipe upgrade {row['exp']}")
    if not ok:
        raise typer.Exit(EXIT_REFUSED)


def _plan_dict(lab: Path, plan: UpgradePlan) -> dict[str, Any]:
    return {
        "exp": _name(lab, plan.exp_dir),
        "ok": plan.ok,
        "state": plan.state,
        "message": plan.message,
        "framework_version": plan.framework_version,
        "changed": plan.changed,
        "diffs": [{"field": f, "locked": a, "new": b} for f, a, b in plan.diffs],
        "problems": [p.to_dict() for p in plan.problems],
    }


@app.command("upgrade")
def upgrade(
    exp: Annotated[str, typer.Argument(help="experiment name or path (default: the one you are in)")] = "",
    all_: Annotated[bool, typer.Option("--all", help="every experiment with a lock; all are written or none")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show what would change; write nothing")] = False,
    framework_version: Annotated[
        str | None, typer.Option("--framework-version", help="move to this framework version")
    ] = None,
    accept_runtime_change: Annotated[
        bool, typer.Option("--accept-runtime-change", help="a removed runtime moves to the recipe's default version")
    ] = False,
    catalog: Annotated[str | None, typer.Option("--catalog", help=_CATALOG_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Rewrite locks from the local catalog; exit 0 written (or nothing to do), 1 refused (nothing written), 2 usage."""
    from starforge import __version__
    from starforge.lab import UpgradeError, apply_upgrade, plan_upgrade

    out = Output(as_json=as_json)
    lab = _lab(out)
    exps = _experiments(out, lab, exp, all_)
    cat = _catalog(out, catalog)
    plans = [plan_upgrade(d, cat, __version__, framework_version=framework_version,
                          accept_runtime_change=accept_runtime_change) for d in exps]
    refused = [p for p in plans if not p.ok]
    written: list[Path] = []
    error = ""
    if not refused and not dry_run:
        try:
            written = apply_upgrade(plans)
        except UpgradeError as exc:
            error = str(exc)
    rows = [_plan_dict(lab, p) for p in plans]
    ok = not refused and not error
    if as_json:
        out.emit({"ok": ok, "dry_run": dry_run, "error": error, "experiments": rows,
                  "written": [_name(lab, f.parent) for f in written]})
    else:
        for row, plan in zip(rows, plans, strict=True):
            if not plan.ok:
                out.problems(f"{row['exp']}: {plan.state} — {plan.message}", plan.problems)
                if not plan.problems:
                    out.info(f"✗ {row['exp']}: {plan.state} — {plan.message}")
                continue
            verb = "would change" if dry_run else "upgraded"
            if not plan.diffs and not plan.changed:
                out.line(f"✓ {row['exp']}  already current")
                continue
            out.line(f"{'•' if dry_run else '✓'} {row['exp']}  {verb} ({plan.state} → current)")
            if plan.diffs:
                out.line(_diff_table(out, plan.diffs, ["field", "locked", "new"]))
        if refused:
            out.info(f"nothing was written: {len(refused)} of {counted(len(plans), 'experiment')} refused")
        if error:
            out.info(f"error: {error}")
    if not ok:
        raise typer.Exit(EXIT_REFUSED)
