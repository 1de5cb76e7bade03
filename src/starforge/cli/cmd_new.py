"""`sf new`: create an experiment from a recipe template (or another experiment) with its recipe.lock.json."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from starforge.cli._lab import lab_root, load_catalog_or_abort
from starforge.cli._output import EXIT_REFUSED, Output

if TYPE_CHECKING:
    pass

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Create an experiment from a recipe template, with its recipe.lock.json.",
)


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="experiment name: experiments/<name> (or smoke/<name>)")],
    method: Annotated[str, typer.Option("--method", "--recipe", "-m",
                                        help="recipe id <framework>/<method> (`sf methods` lists them); default: the "
                                             "recipe the lab's experiments share, else the catalog's first")] = "",
    from_: Annotated[str, typer.Option("--from", help="copy this experiment (files and recipe) instead")] = "",
    framework_version: Annotated[str, typer.Option("--framework-version",
                                                   help="framework version to lock (default: the recipe's default, "
                                                        "or the --from experiment's)")] = "",
    catalog: Annotated[str | None, typer.Option("--catalog", help="recipe tree to use instead of the built-in "
                                                                  "catalog")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Create an experiment folder and its lock; exit 0 created, 1 refused (nothing written), 2 usage."""
    from starforge.lab import create_experiment

    out = Output(as_json=as_json)
    lab = lab_root(out)
    cat = load_catalog_or_abort(out, catalog)
    try:
        made = create_experiment(lab, name, cat, method=method, source=from_, framework_version=framework_version)
    except OSError as exc:
        out.abort(f"cannot create the experiment: {exc}", hint="nothing was left behind; check the folder's permissions")
    if made.path is None:
        if as_json:
            out.emit({"ok": False, "problems": [p.to_dict() for p in made.problems]})
        else:
            out.problems("The experiment was not created", made.problems)
        raise typer.Exit(EXIT_REFUSED)
    files = sorted(p.relative_to(made.path).as_posix() for p in made.path.rglob("*") if p.is_file())
    result = {"ok": True, "exp": made.exp, "recipe": made.recipe, "framework_version": made.framework_version,
              "source": made.source, "files": files}
    out.emit(result, lambda r: "\n".join(f"  {r['exp']}/{f}" for f in r["files"]))
    short = made.path.name if made.exp.startswith("experiments/") else made.exp
    out.success(f"Created {made.exp} ({made.recipe}, framework {made.framework_version}, from {made.source})")
    out.hint(f"edit {made.exp}/config.yaml, then `sf validate {short}`")
    out.hint(f"commit it (git add -A && git commit -m '{short}'), then `sf submit {short} --profile <name>[:gpus]`")
