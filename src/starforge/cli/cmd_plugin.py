"""`sf plugin`: publish a plugin folder as an immutable version, list and show plugins, enable or disable one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from starforge.cli._api_session import api_session
from starforge.cli._job_text import age
from starforge.cli._output import EXIT_USAGE, Output, human_size
from starforge.cli.cmd_job import render_table

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Publish and manage plugins (publish, ls, show, enable, disable).",
)

JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
PluginRef = Annotated[str, typer.Argument(metavar="OWNER/NAME", help="the plugin, e.g. alice/opsd-patch")]
VersionOpt = Annotated[str | None, typer.Option("--version", help="one version (default: the latest, or every "
                                                                  "version for enable/disable)")]
_CHANGE_HINT = "only the plugin's owner (or an administrator) may change it; `sf plugin ls` shows the owners"


def _split(out: Output, ref: str) -> tuple[str, str]:
    owner, slash, name = ref.strip().partition("/")
    if not slash or not owner or not name or "/" in name or "@" in name:
        out.abort(f"{ref!r} is not OWNER/NAME", hint="e.g. `sf plugin show alice/opsd-patch --version 1.2.0`; "
                                                     "`sf plugin ls` lists them", code=EXIT_USAGE)
    return owner, name


@app.command("publish")
def publish(
    path: Annotated[Path, typer.Argument(metavar="DIR", help="the plugin folder (with plugin.yaml: name, version, "
                                                             "summary; kind: benchmark for a benchmark pack)")],
    owner: Annotated[str | None, typer.Option("--owner", help="publish under this namespace (yours by default; "
                                                              "another's only as an administrator)")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Publish DIR as a new plugin version (versions are immutable); the console's digest must equal the folder's."""
    out = Output(as_json=as_json)
    if not path.is_dir():
        out.abort(f"{path} is not a folder", hint="publish a plugin folder holding plugin.yaml", code=EXIT_USAGE)
    with api_session(out, forbidden_hint="publish under your own namespace (leave out --owner)") as console:
        published = console.publish_plugin(path, owner=owner)
    ref = f"{published.get('id', '')}@{published.get('version', '')}"
    out.emit(published, lambda _: ref)
    if not as_json:
        out.success(f"Published {ref} ({human_size(published.get('size_bytes'))}, digest {published.get('digest')})")
        if published.get("kind") == "benchmark":
            out.hint("its suites are offered from now on: `sf bench ls` lists them, `sf bench run EXP --model M "
                     "--suites NAME` runs one")
        else:
            out.hint(f'pin it in an experiment\'s plugins.lock.json: {{"id": "{published.get("id")}", "version": '
                     f'"{published.get("version")}", "digest": "{published.get("digest")}"}}')


@app.command("ls")
def ls(as_json: JsonOpt = False) -> None:
    """List the published plugins with their latest version."""
    out = Output(as_json=as_json)
    with api_session(out) as console:
        rows = console.plugins()

    def table(_: Any) -> str | None:
        if not rows:
            return None
        return render_table(out, ["plugin", "latest", "kind", "enabled", "summary"], [
            [r.get("id", ""), r.get("latest_version", ""), r.get("kind", ""), "yes" if r.get("enabled") else "no",
             str(r.get("summary") or "")[:60]] for r in rows])

    out.emit({"plugins": rows}, table)
    if not rows and not as_json:
        out.info("No plugin is published yet.")
        out.hint("publish one with `sf plugin publish DIR`")


@app.command("show")
def show(ref: PluginRef, version: VersionOpt = None, as_json: JsonOpt = False) -> None:
    """Show one plugin version (the latest by default): kind, summary, enabled, digest, size, who published it."""
    out = Output(as_json=as_json)
    owner, name = _split(out, ref)
    with api_session(out) as console:
        row = console.plugin(owner, name, version)

    def text(r: dict[str, Any]) -> str:
        return "\n".join([
            f"plugin:    {r.get('id')}@{r.get('version')}", f"kind:      {r.get('kind')}",
            f"enabled:   {'yes' if r.get('enabled') else 'no'}", f"digest:    {r.get('digest')}",
            f"size:      {human_size(r.get('size_bytes'))}",
            f"published: {age(r.get('created_at'))} by {r.get('created_by')}", f"summary:   {r.get('summary') or ''}",
        ])

    out.emit(row, text)


def _set_enabled(ref: str, version: str | None, enabled: bool, as_json: bool) -> None:
    out = Output(as_json=as_json)
    owner, name = _split(out, ref)
    with api_session(out, forbidden_hint=_CHANGE_HINT) as console:
        answer = console.set_plugin_enabled(owner, name, enabled, version=version)
    out.emit(answer, lambda a: None)
    if not as_json:
        count = answer.get("versions_affected", 0)
        which = f"@{version}" if version else f" ({count} version{'s' if count != 1 else ''})"
        out.success(f"{'Enabled' if enabled else 'Disabled'} {answer.get('id', ref)}{which}")


@app.command("enable")
def enable(ref: PluginRef, version: VersionOpt = None, as_json: JsonOpt = False) -> None:
    """Enable a plugin (every version, or --version): jobs may use it again."""
    _set_enabled(ref, version, True, as_json)


@app.command("disable")
def disable(ref: PluginRef, version: VersionOpt = None, as_json: JsonOpt = False) -> None:
    """Disable a plugin (every version, or --version): admission refuses jobs that pin it."""
    _set_enabled(ref, version, False, as_json)
