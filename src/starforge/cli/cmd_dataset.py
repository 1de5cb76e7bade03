"""`sf dataset`: push a file or folder as an immutable dataset version, and list the datasets you may read."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from starforge.cli._output import EXIT_REFUSED, EXIT_USAGE, Output, human_size
from starforge.cli.cmd_job import console_session, render_table

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Push and list datasets (push, ls).",
)

JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]


def _target(out: Output, text: str) -> tuple[str | None, str, str]:
    """Split `[OWNER/]NAME@VERSION`; the console checks each part (safe segments, a version)."""
    head, at, version = text.partition("@")
    if not at or not head or not version:
        out.abort(f"{text!r} is not NAME@VERSION", hint="e.g. `sf dataset push data.jsonl gsm8k@v1`; versions are "
                                                        "immutable, so pick a new one for new data", code=EXIT_USAGE)
    owner, slash, name = head.rpartition("/")
    return (owner if slash else None), name, version


@app.command("push")
def push(
    path: Annotated[Path, typer.Argument(help="a data file, or a folder of files (sent as one archive)")],
    target: Annotated[str, typer.Argument(metavar="NAME@VERSION", help="the dataset and its new version "
                                                                       "([OWNER/]NAME@VERSION)")],
    public: Annotated[bool, typer.Option("--public", help="let every account read it (default: only you and "
                                                          "those you grant)")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Upload PATH as a new dataset version; print its reference (`<owner>/<name>@<version>`) for --train-dataset."""
    out = Output(as_json=as_json)
    owner, name, version = _target(out, target)
    if not path.exists():
        out.abort(f"{path} does not exist", hint="push a data file or a folder", code=EXIT_USAGE)
    from starforge.client import Rejected

    with console_session(out) as console:
        try:
            pushed = console.push_dataset(path, name, version, public=public, owner=owner)
        except Rejected as exc:
            if not exc.problems:
                raise
            if out.as_json:
                out.emit({"ok": False, "title": exc.title, "problems": [p.to_dict() for p in exc.problems]})
            else:
                out.problems(exc.title or "The dataset was refused", exc.problems)
            raise typer.Exit(EXIT_REFUSED) from None
    ref = str(pushed.get("ref") or "")
    out.emit({"ref": ref}, lambda _: ref)
    if not as_json:
        out.success(f"Pushed {ref} ({pushed.get('files', '?')} files, {human_size(pushed.get('total_bytes'))}, "
                    f"{pushed.get('visibility', 'private')})")
        out.hint(f"train on it with `sf submit <exp> --train-dataset {ref}[:FILE]`")


@app.command("ls")
def ls(as_json: JsonOpt = False) -> None:
    """List the datasets you may read: your own, public ones, and those shared with you."""
    out = Output(as_json=as_json)
    with console_session(out) as console:
        rows = console.datasets()

    def table(_: Any) -> str | None:
        if not rows:
            return None
        return render_table(out, ["dataset", "latest", "versions", "files", "size", "visibility"], [
            [r.get("id", ""), r.get("latest", ""), ", ".join(str(v) for v in r.get("versions") or []),
             r.get("files", "-"), human_size(r.get("total_bytes")), r.get("visibility", "")] for r in rows])

    out.emit({"datasets": rows}, table)
    if not rows and not as_json:
        out.info("No datasets you may read yet.")
        out.hint("push one with `sf dataset push PATH NAME@VERSION`")
