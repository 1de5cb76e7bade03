"""`sf init`: create a lab (starforge.yaml, experiments/, common/, configs/, README, .gitignore) and commit it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from starforge.cli._output import EXIT_REFUSED, Output

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Create a lab: starforge.yaml, experiments/, common/, configs/, git.",
)


@app.command()
def init(
    directory: Annotated[str, typer.Argument(help="where to create the lab (created if missing)")] = ".",
    name: Annotated[str | None, typer.Option("--name", help="lab name, every job's project (default: the folder name)")] = None,
    no_git: Annotated[bool, typer.Option("--no-git", help="do not create a git repository or commit")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="create the lab even if the folder already has files")] = False,
) -> None:
    """Create a lab and its first commit; exit 0 created, 1 refused (already a lab, folder not empty, git failed)."""
    from starforge.lab import ProvenanceError, ScaffoldError, git_provenance, init_lab

    out = Output()
    target = Path(directory)
    allow = yes or (target.is_dir() and sys.stdin.isatty() and any(target.iterdir())
                    and typer.confirm(f"{target.resolve()} is not empty; create the lab among its files?"))
    try:
        root = init_lab(target, name=name, git=not no_git, allow_non_empty=allow)
    except ScaffoldError as exc:
        out.abort(str(exc), hint=exc.hint, code=EXIT_REFUSED)
    out.success(f"Created the lab {root.name if name is None else name} in {root}")
    if not no_git:
        try:
            prov = git_provenance(root, ".")
        except ProvenanceError:
            prov = None
        if prov is not None and not prov.git_dirty:
            out.info(f"  first commit {prov.git_commit}")
        else:
            out.hint("commit the new files before submitting: git add -A && git commit -m 'StarForge lab'")
    where = "" if root == Path.cwd().resolve() else f"cd {directory} && "
    out.hint(f"{where}sf new <exp> --method <framework>/<method>   (sf methods lists the recipes)")
