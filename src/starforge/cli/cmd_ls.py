"""`sf ls`: the lab's experiments with their recipe, framework version and lock label; no network."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from starforge.cli._output import EXIT_REFUSED, EXIT_USAGE, Output

if TYPE_CHECKING:
    from starforge.lab import ExperimentRow
    from starforge.recipes import Catalog

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="List the lab's experiments and their lock states.",
)


def _lab(out: Output) -> Path:
    from starforge.lab import LabNotFound, find_root

    try:
        return find_root()
    except LabNotFound as exc:
        out.abort(str(exc), hint="run it inside a lab, or `sf init my-lab` to create one", code=EXIT_USAGE)


def _catalog(out: Output, path: str | None) -> Catalog:
    from starforge.lab import client_catalog
    from starforge.recipes import CatalogError

    try:
        return client_catalog(path)
    except CatalogError as exc:
        out.abort(str(exc), hint="fix the manifests listed above", code=EXIT_REFUSED)
    except ValueError as exc:
        out.abort(str(exc), code=EXIT_USAGE)


def _table(out: Output, rows: list[ExperimentRow]) -> str:
    return out.table([(r.name, r.recipe or "-", r.framework_version or "-", r.label) for r in rows],
                     ["experiment", "recipe", "framework", "lock"])


@app.command()
def ls(
    catalog: Annotated[str | None, typer.Option("--catalog", help="recipe tree to use instead of the built-in "
                                                                  "catalog")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """List experiments/ and smoke/ with recipe, framework version and lock label (blank = current); exit 0."""
    from starforge.lab import list_experiments

    out = Output(as_json=as_json)
    lab = _lab(out)
    rows = list_experiments(lab, _catalog(out, catalog))
    out.emit({"lab": str(lab), "experiments": [r.to_dict() for r in rows]}, lambda _: _table(out, rows) if rows else None)
    if not rows and not as_json:
        out.info("No experiments yet.")
        out.hint("create one with `sf new <name> --method <framework>/<method>` (`sf methods` lists them)")
    elif not as_json and any(not r.admits for r in rows):
        out.hint("`sf recipe status <experiment>` explains a lock that is not admitted")
