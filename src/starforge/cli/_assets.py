"""The shapes shared by `sf dataset|corpus|model|volume`: one push command, one listing command, `NAME@VERSION`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from starforge.cli._output import EXIT_USAGE, Output, counted, human_size
from starforge.cli.cmd_job import console_session, render_table

if TYPE_CHECKING:
    from starforge.client import Console

__all__ = ["add_ls", "add_push", "new_app", "parse_target", "versions"]

JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]

# kind -> (an example push, the next step after a push, with `{ref}`)
_GUIDE = {
    "dataset": ("sf dataset push data.jsonl gsm8k@v1", "train on it with `sf submit <exp> --train-dataset {ref}[:FILE]`"),
    "corpus": ("sf corpus push docs/ handbook@v1", "mount it in a job with `sf submit <exp> --corpus {ref}`"),
    "model": ("sf model push ./my-model qwen-tuned@v1", "start a job from it with `sf submit <exp> --model {ref}`"),
}


def new_app(help_text: str) -> typer.Typer:
    """Return the Typer group of one registry command (`sf dataset`, `sf corpus`, `sf model`, `sf volume`)."""
    return typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False,
                       no_args_is_help=True, help=help_text)


def parse_target(out: Output, kind: str, text: str) -> tuple[str | None, str, str]:
    """Split `[OWNER/]NAME@VERSION`; the console checks each part (safe segments, a version)."""
    head, at, version = text.partition("@")
    if not at or not head or not version:
        out.abort(f"{text!r} is not NAME@VERSION", hint=f"e.g. `{_GUIDE[kind][0]}`; versions are immutable, so "
                                                         "pick a new one for new files", code=EXIT_USAGE)
    owner, slash, name = head.rpartition("/")
    return (owner if slash else None), name, version


def _push(out: Output, kind: str, path: Path, target: str, *, public: bool, description: str) -> None:
    owner, name, version = parse_target(out, kind, target)
    if not path.exists():
        out.abort(f"{path} does not exist", hint=f"push a file or a folder, e.g. `{_GUIDE[kind][0]}`",
                  code=EXIT_USAGE)
    from starforge.client import Rejected

    with console_session(out) as console:
        try:
            pushed = console.push_asset(kind, path, name, version, public=public, owner=owner,
                                        description=description)
        except Rejected as exc:
            out.fail(exc, title=f"The {kind} was refused")
    ref = str(pushed.get("ref") or "")
    out.emit({"ref": ref}, lambda _: ref)
    if not out.as_json:
        out.success(f"Pushed {ref} ({counted(pushed.get('files'), 'file')}, {human_size(pushed.get('total_bytes'))}, "
                    f"{pushed.get('visibility', 'private')})")
        out.hint(_GUIDE[kind][1].format(ref=ref))


def add_push(app: typer.Typer, kind: str, doc: str) -> None:
    """Add `push PATH [OWNER/]NAME@VERSION [--public] [--description T] [--json]` for `kind` to `app`; it prints the
    new version's reference (`{"ref"}` under --json) and the next step."""

    @app.command("push", help=doc)
    def push(
        path: Annotated[Path, typer.Argument(metavar="PATH", help="a file, or a folder of files (sent as one "
                                                                  "archive)")],
        target: Annotated[str, typer.Argument(metavar="NAME@VERSION", help="the new version "
                                                                           "([OWNER/]NAME@VERSION); immutable")],
        public: Annotated[bool, typer.Option("--public", help="let every account read it (default: only you and "
                                                              "those you grant)")] = False,
        description: Annotated[str, typer.Option("--description", help="one line on what this version is")] = "",
        as_json: JsonOpt = False,
    ) -> None:
        _push(Output(as_json=as_json), kind, path, target, public=public, description=description)


def add_ls(app: typer.Typer, key: str, fetch: Callable[[Console], list[dict[str, Any]]], doc: str,
           headers: Sequence[str], cells: Callable[[dict[str, Any]], Sequence[Any]], *, empty: str,
           hint: str) -> None:
    """Add `ls [--json]` to `app`: `{key: fetch(console)}` under --json, else a table of `cells(row)`, or `empty`
    and `hint` when there is no row."""

    @app.command("ls", help=doc)
    def ls(as_json: JsonOpt = False) -> None:
        out = Output(as_json=as_json)
        with console_session(out) as console:
            rows = fetch(console)

        def table(_: Any) -> str | None:
            return render_table(out, headers, [cells(r) for r in rows]) if rows else None

        out.emit({key: rows}, table)
        if not rows and not as_json:
            out.info(empty)
            out.hint(hint)


def versions(row: dict[str, Any], key: str = "versions") -> str:
    """Return a row's version names (`row[key]`, newest first) as `v2, v1`."""
    names = row.get(key)
    return ", ".join(str(v) for v in names) if isinstance(names, list) else ""
