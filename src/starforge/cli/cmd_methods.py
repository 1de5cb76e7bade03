"""`sf methods`: list the recipe catalog in product order, or show one recipe with its parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from starforge.cli._output import EXIT_REFUSED, EXIT_USAGE, Output, counted

if TYPE_CHECKING:
    from starforge.recipes import Catalog, Param, Recipe

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="List the recipe catalog or show one recipe with its parameters.",
)


def _open(out: Output, catalog: str | None, scheme: str) -> Catalog:
    from starforge.recipes import CatalogError, open_catalog

    try:
        return open_catalog(catalog, scheme)
    except CatalogError as exc:
        out.abort(str(exc), hint="fix the manifests listed above", code=EXIT_REFUSED)
    except ValueError as exc:
        out.abort(str(exc), hint="--catalog takes a recipe tree; --digest-scheme manifest|manifest+template",
                  code=EXIT_USAGE)


def _row(recipe: Recipe) -> dict[str, Any]:
    return {
        "id": recipe.id,
        "name": recipe.name,
        "framework": recipe.framework,
        "version": recipe.version,
        "category": recipe.category,
        "title": recipe.title,
        "framework_versions": recipe.framework_versions,
        "default_version": recipe.default_version,
        "digest": recipe.digest(),
    }


def _bounds(param: Param) -> str:
    if param.min is None and param.max is None:
        return ""
    if param.max is None:
        return f"{'>' if param.exclusive_min else '>='}{param.min}"
    if param.min is None:
        return f"<={param.max}"
    return f"{'(' if param.exclusive_min else '['}{param.min}, {param.max}]"


def _value(value: Any) -> str:
    from starforge.recipes import format_override

    return "" if value is None else format_override(value)


def _default(param: Param, template: dict[str, Any], framework_version: str) -> str:
    """Return the DEFAULT cell: the recipe's default, else the template config's value marked `(template)`, else -."""
    from starforge.lab.exp_config import config_lookup

    path = param.path_for(framework_version)
    found, value = config_lookup(template, path) if path else (False, None)
    found = found and value is not None and not isinstance(value, (dict, list))
    if param.default is not None:
        same = not found or _value(value) == _value(param.default)
        return _value(param.default) + ("" if same else f" (template: {_value(value)})")
    return f"{_value(value)} (template)" if found else "-"


def _detail(out: Output, recipe: Recipe) -> str:
    from starforge.lab.exp_config import read_config

    lines = [f"{recipe.id} {recipe.version}" + (f" — {recipe.title}" if recipe.title else "")]
    if recipe.summary:
        lines.append(f"  {' '.join(recipe.summary.split())}")
    variants = [
        f"{v}{' (default)' if v == recipe.default_version else ''}"
        + (f" → {var.runtime_id}" if var.runtime_id else "") + (" [deprecated]" if var.deprecated else "")
        for v, var in recipe.runtime.versions.items()
    ]
    lifecycle = [f"{a} ({counted(recipe.lifecycle_resources.get(a, 0), 'GPU')})" for a in recipe.lifecycle]
    facts = [
        ("framework", f"{recipe.framework}: {', '.join(variants)}"),
        ("entrypoint", f"{recipe.entrypoint.kind} {recipe.entrypoint.value}"),
        ("roles", ", ".join(recipe.roles) or "-"),
        ("lifecycle", ", ".join(lifecycle) or "-"),
        ("observability", recipe.observability),
        ("requires core", recipe.requires_core),
        ("digest", recipe.digest()),
    ]
    lines += [f"  {k.ljust(13)} {v}" for k, v in facts]
    if recipe.params:
        template = read_config(recipe.template_dir)
        rows = [
            (p.name + (" *" if p.required else ""), p.type, _bounds(p), _default(p, template, recipe.default_version),
             ", ".join(_value(c) for c in p.choices or ()), p.path_for(recipe.default_version),
             " ".join(p.doc.split()))
            for p in recipe.params.values()
        ]
        lines += ["", out.table(rows, ["param", "type", "bounds", "default", "choices", "path", "doc"])]
        if any(p.required for p in recipe.params.values()):
            lines.append("  * required")
        if any("(template" in row[3] for row in rows):
            lines.append("  (template): the value `sf new` writes into the experiment's config.yaml; a job uses it "
                         "unless --set changes it")
    else:
        lines += ["", "  (no parameters)"]
    return "\n".join(lines)


@app.command()
def methods(
    recipe_id: Annotated[str, typer.Argument(help="a recipe id such as nemo-rl/grpo (omit to list them all)")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (one recipe: its manifest as loaded)")] = False,
    catalog: Annotated[
        str | None, typer.Option("--catalog", help="recipe tree <framework>/<name>/recipe.yaml instead of the built-in")
    ] = None,
    digest_scheme: Annotated[
        str, typer.Option("--digest-scheme", help="bundle digest scheme: manifest or manifest+template")
    ] = "manifest",
) -> None:
    """List the catalog in product order, or show one recipe; exit 0, 1 unknown recipe or broken catalog, 2 usage."""
    out = Output(as_json=as_json)
    cat = _open(out, catalog, digest_scheme)
    if not recipe_id:
        rows = [_row(r) for r in cat.recipes]
        out.emit({"recipes": rows}, lambda data: out.table(
            [(r["id"], r["version"], r["default_version"], r["category"], r["title"]) for r in data["recipes"]],
            ["id", "version", "runtime", "category", "title"]) if data["recipes"] else "(the catalog is empty)")
        return
    recipe, problems = cat.lookup(recipe_id, field="recipe")
    if recipe is None:
        if as_json:
            out.emit({"ok": False, "errors": [p.to_dict() for p in problems]})
        else:
            out.problems("Unknown recipe", problems)
        raise typer.Exit(EXIT_REFUSED)
    if as_json:
        data = dict(recipe.manifest)
        data.update(id=recipe.id, digest=recipe.digest(), manifest_digest=recipe.manifest_digest,
                    template_digest=recipe.template_digest)
        out.emit(data)
        return
    out.line(_detail(out, recipe))
