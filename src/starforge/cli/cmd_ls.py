"""`sf ls`: the lab's experiments with their recipe, framework version and lock label; no network."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from starforge.cli._lab import lab_root, load_catalog_or_abort
from starforge.cli._output import Output

if TYPE_CHECKING:
    from starforge.lab import ExperimentRow

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="List the lab's experiments and their lock states.",
)


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
    lab = lab_root(out)
    rows = list_experiments(lab, load_catalog_or_abort(out, catalog))
    out.emit({"lab": str(lab), "experiments": [r.to_dict() for r in rows]}, lambda _: _table(out, rows) if rows else None)
    if not rows and not as_json:
        out.info("No experiments yet.")
        out.hint("create one with `sf new <name> --method <framework>/<method>` (`sf methods` lists them)")
    elif not as_json and any(not r.admits for r in rows):
        out.hint("`sf recipe status <experiment>` explains a lock that is not admitted")
