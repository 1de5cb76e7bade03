"""`sf spec`: check a JobSpec with the shared rules, explain a saved rejection, print the JSON Schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from starforge.cli._output import EXIT_REFUSED, EXIT_USAGE, Output
from starforge.contract import Problem, loads

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Check, explain and describe forge/v2 JobSpecs.",
)

_DEFAULT_FILE = ".starforge/jobspec.json"

# Hints shown for problems that arrive without one (the contract's type rules carry none); keyed by code.
_TYPE_HINTS = {
    "missing_field": "add {field}; `sf spec schema` shows every required key",
    "empty_object": "give {field} its content, or remove it",
    "not_an_object": "write {field} as a JSON object {{...}}",
    "not_a_list": "write {field} as a JSON array [...]",
    "not_a_string": "write {field} as a JSON string in double quotes",
    "not_a_boolean": "write {field} as true or false, without quotes",
    "not_an_integer": "write {field} as a whole JSON number such as 1 (no quotes, no decimal point, not a boolean)",
    "not_a_number": "write {field} as a JSON number, without quotes",
    "not_positive": "use a number of 1 or more for {field}",
}


def _with_hints(problems: list[Problem]) -> list[Problem]:
    """Return `problems` with a generic hint for those that carry none, so every rejection says how to fix it."""
    from dataclasses import replace

    return [replace(p, hint=_TYPE_HINTS.get(p.code, "see `sf spec schema` for the expected shape of {field}")
                    .format(field=p.field)) if not p.hint else p for p in problems]


def _read_document(path: str, out: Output) -> tuple[Any, list[Problem]]:
    """Read JSON from a file or `-`; return the document, or a problem when the text is not JSON."""
    if path == "-":
        text = sys.stdin.read()
    else:
        file = Path(path)
        if not file.is_file():
            out.abort(f"no such file: {path}", hint="pass a JobSpec file or - for stdin", code=EXIT_USAGE)
        text = file.read_text(encoding="utf-8-sig")
    try:
        return loads(text), []
    except ValueError as exc:
        return None, [Problem("<root>", "invalid_json", f"not valid JSON: {exc}", "check the file's syntax")]


def _default_path() -> str:
    from starforge.lab import find_root_or_none

    root = find_root_or_none()
    if root is not None and (root / _DEFAULT_FILE).is_file():
        return str(root / _DEFAULT_FILE)
    return "-"


@app.command("check")
def check(
    file: Annotated[str, typer.Argument(help="JobSpec file, or - for stdin (default: the lab's .starforge/jobspec.json)")] = "",
    catalog: Annotated[
        str | None, typer.Option("--catalog", help="recipe tree <framework>/<name>/recipe.yaml to check against")
    ] = None,
    digest_scheme: Annotated[
        str, typer.Option("--digest-scheme", help="bundle digest scheme: manifest or manifest+template")
    ] = "manifest",
    no_catalog: Annotated[bool, typer.Option("--no-catalog", help="run the contract rules only")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print exactly one JSON object")] = False,
) -> None:
    """Run the contract rules, then the catalog handshake and recipe gates; exit 0 accepted, 1 rejected, 2 usage."""
    out = Output(as_json=as_json)
    doc, problems = _read_document(file or _default_path(), out)
    warnings: list[Problem] = []
    if not problems:
        from starforge.recipes.verdict import check_document, open_catalog

        cat = None
        if not no_catalog:
            try:
                cat = open_catalog(catalog, digest_scheme)
            except ValueError as exc:
                out.abort(str(exc), hint="--catalog takes a recipe tree; --digest-scheme manifest|manifest+template",
                          code=EXIT_USAGE)
        verdict = check_document(doc, cat)
        problems, warnings = _with_hints(verdict.problems), verdict.warnings
    result = {
        "ok": not problems,
        "errors": [p.to_dict() for p in problems],
        "warnings": [w.to_dict() for w in warnings],
    }
    if as_json:
        out.emit(result)
    elif problems:
        out.problems("The JobSpec was rejected", problems, warnings)
    else:
        out.problems("", [], warnings)
        out.success("The JobSpec is accepted by the contract" + ("" if no_catalog else " and the catalog"))
    if problems:
        raise typer.Exit(EXIT_REFUSED)


@app.command("explain")
def explain(
    file: Annotated[str, typer.Argument(help="a saved rejection (console JSON) or a JobSpec; - for stdin")] = "-",
    as_json: Annotated[bool, typer.Option("--json", help="print the problems as JSON")] = False,
) -> None:
    """Render a saved rejection, or a spec's problems, with fields and hints; exit 1 when there are problems."""
    out = Output(as_json=as_json)
    doc, problems = _read_document(file, out)
    warnings: list[Problem] = []
    if not problems:
        problems, warnings = _problems_of(doc)
        problems = _with_hints(problems)
    if as_json:
        out.emit({"ok": not problems, "errors": [p.to_dict() for p in problems],
                  "warnings": [w.to_dict() for w in warnings]})
    elif problems:
        title = doc.get("detail", "").split("\n", 1)[0] if isinstance(doc, dict) and doc.get("detail") else ""
        out.problems(title or "The JobSpec was rejected", problems, warnings)
    else:
        out.success("Nothing to explain: no problems found")
    if problems:
        raise typer.Exit(EXIT_REFUSED)


def _problems_of(doc: Any) -> tuple[list[Problem], list[Problem]]:
    """Return the problems a document carries (a console rejection) or yields (a JobSpec checked now)."""
    if isinstance(doc, dict) and isinstance(doc.get("problems"), list):
        return [Problem.from_dict(p) for p in doc["problems"]], []
    if isinstance(doc, dict) and isinstance(doc.get("errors"), list):
        warnings = [Problem.from_dict(p) for p in doc.get("warnings") or []]
        return [Problem.from_dict(p) for p in doc["errors"]], warnings
    if isinstance(doc, dict) and isinstance(doc.get("detail"), str) and "apiVersion" not in doc:
        return _problems_from_detail(doc["detail"]), []
    from starforge.recipes.verdict import check_document, open_catalog

    verdict = check_document(doc, open_catalog(None, "manifest"))
    return verdict.problems, verdict.warnings


def _problems_from_detail(detail: str) -> list[Problem]:
    problems = []
    for line in detail.splitlines()[1:]:
        if line.startswith("- "):
            field, _, message = line[2:].partition(": ")
            problems.append(Problem(field, "unknown", message))
    return problems or [Problem("<root>", "unknown", detail)]


@app.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema (draft 2020-12) of a forge/v2 JobSpec."""
    from starforge.contract import schema

    sys.stdout.write(json.dumps(schema(), indent=2) + "\n")
