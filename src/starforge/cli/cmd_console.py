"""`sf console`: run a console (`up`) and administer its state (tokens, users, data, quotas), runtime and image caches."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from starforge.cli._output import EXIT_REFUSED, EXIT_USAGE, Output, human_size
from starforge.cli._quota_options import quota_options, quota_text

app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Run and administer a StarForge console.")
token_app = typer.Typer(no_args_is_help=True, help="API tokens for CI and scripts.")
user_app = typer.Typer(no_args_is_help=True, help="Accounts and roles.")
corpus_app = typer.Typer(no_args_is_help=True, help="Read-only corpora jobs can mount (DOCS_DIR).")
dataset_app = typer.Typer(no_args_is_help=True, help="Datasets jobs can read.")
quota_app = typer.Typer(no_args_is_help=True, help="Per-account quotas.")
runtime_app = typer.Typer(no_args_is_help=True, help="Recipe runtimes: build them ahead of time, list what is built.")
image_app = typer.Typer(no_args_is_help=True, help="Job images: pull them ahead of time, list the image cache.")
app.add_typer(token_app, name="token")
app.add_typer(user_app, name="user")
app.add_typer(corpus_app, name="corpus")
app.add_typer(dataset_app, name="dataset")
app.add_typer(quota_app, name="quota")
app.add_typer(runtime_app, name="runtime")
app.add_typer(image_app, name="image")

StateDir = Annotated[Path | None, typer.Option("--state-dir", help="console state directory (SQLite, runs, bundles)")]
DatabaseUrl = Annotated[str | None, typer.Option("--database-url", help="e.g. postgresql+psycopg://user@host/db")]
ConfigFile = Annotated[Path | None, typer.Option("--config", help="YAML configuration file")]
AsJson = Annotated[bool, typer.Option("--json", help="print JSON")]


def _settings(state_dir: Path | None, database_url: str | None, config: Path | None, **extra: Any) -> Any:
    from starforge.console.settings import SettingsError, load_settings

    try:
        return load_settings(config, state_dir=state_dir, database_url=database_url, **extra)
    except SettingsError as exc:
        Output().abort(str(exc), hint="pass --state-dir DIR (and --config FILE for a full configuration)",
                       code=EXIT_USAGE)


def _db(state_dir: Path | None, database_url: str | None, config: Path | None) -> tuple[Any, Any]:
    from starforge.console.operator import open_database

    settings = _settings(state_dir, database_url, config)
    return settings, open_database(settings)


def _run(out: Output, action: Any) -> Any:
    from starforge.console.operator import ConsoleError  # what an operator action refuses with

    try:
        return action()
    except ConsoleError as exc:
        if not exc.problems:
            out.abort(exc.detail)
        if out.as_json:
            out.refusal_json(exc.detail, exc.problems)
        else:
            out.problems(exc.detail, exc.problems)
        raise typer.Exit(EXIT_REFUSED) from None


@app.command("up")
def up(
    host: Annotated[str | None, typer.Option(help="address to listen on (default: the config's host, else 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="port to listen on (default: the config's port, else 8080)")] = None,
    state_dir: StateDir = None,
    database_url: DatabaseUrl = None,
    catalog: Annotated[Path | None, typer.Option("--catalog", help="serve this recipe tree instead of the builtin")] = None,
    digest_scheme: Annotated[str, typer.Option("--digest-scheme", help="manifest or manifest+template")] = "manifest",
    catalog_core_version: Annotated[str | None, typer.Option(help="core version the --catalog tree was built for")] = None,
    catalog_core_requirement: Annotated[str | None, typer.Option(help="client versions the --catalog serves")] = None,
    config: ConfigFile = None,
    allow_registry: Annotated[list[str] | None, typer.Option(
        "--allow-registry", help="allow images from this registry host (repeat; adds to image_allowlist)")] = None,
    executor: Annotated[str | None, typer.Option(
        "--executor", help="engine of every series the config does not map: local (default), slurm or ray")] = None,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="the Ray cluster's Jobs API, e.g. http://127.0.0.1:8265 (with --executor ray)")] = None,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, max=64, help="processes serving the API on the one port, one of them (the elected "
        "leader) running the scheduler (default: this machine's cores, at most 8; 1: a single process)")] = None,
) -> None:
    """Run the console in the foreground (SQLite in the state directory unless --database-url is given)."""
    import gc

    # start-up allocates hundreds of thousands of objects that live as long as the console, and the collector would
    # scan them again and again while the modules load (~0.1 s of CPU): it runs again once they are frozen (server._run)
    gc.disable()
    from starforge.console.settings import CatalogSettings
    from starforge.engines.base import ExecutorError
    from starforge.engines.sandbox import SandboxUnavailable
    from starforge.recipes import CatalogError

    catalog_settings = None
    if catalog is not None or digest_scheme != "manifest" or catalog_core_version or catalog_core_requirement:
        catalog_settings = CatalogSettings(str(catalog) if catalog else None, digest_scheme, catalog_core_version,
                                           catalog_core_requirement)
    settings = _settings(state_dir or Path(".starforge-console"), database_url, config, host=host, port=port,
                         catalog=catalog_settings, executor=executor)
    from dataclasses import replace

    if ray_address:
        settings = settings.with_engine_config("ray", replace(settings.ray, address=ray_address))
    if "ray" in settings.engines() and not settings.ray.address:
        Output().abort("the Ray engine needs the address of its cluster's Jobs API",
                       hint="pass --ray-address http://HEAD:8265 (or `executors.ray.address` in the config file)",
                       code=EXIT_USAGE)
    if allow_registry:
        hosts = tuple(dict.fromkeys([*(settings.image_allowlist or ()), *(h.strip() for h in allow_registry)]))
        settings = replace(settings, image_allowlist=hosts)
    from starforge.console.server import PortUnavailable, default_workers, serve
    from starforge.console.workers import WorkerFailed

    try:
        serve(settings, workers=workers or default_workers())
    except CatalogError as exc:
        Output().abort(f"the recipe catalog is invalid, the console will not start: {exc}")
    except SandboxUnavailable as exc:
        Output().abort(f"jobs cannot be sandboxed here, the console will not start: {exc}", hint=exc.fix)
    except PortUnavailable as exc:
        Output().abort(str(exc), hint="choose another --port (or `port:` in the config file), or stop what uses it")
    except WorkerFailed as exc:
        Output().abort(str(exc), hint="see the worker's traceback above; `--workers 1` runs a single process")
    except ExecutorError as exc:
        Output().abort(f"an engine of this console cannot be reached, the console will not start: {exc}",
                       hint="check the engine's address (--ray-address, executors.ray.address) and that Slurm's "
                            "commands work for the console's user (sinfo)")


def _status_text(state: dict[str, Any]) -> str:
    this, leader = state["this"], state.get("leader")
    lines = [f"this process: pid {this['pid']} on {this['host']} (console {this['console_id']}, "
             f"{'leads the scheduler' if this.get('leads') else 'serves the API'})"]
    if leader is None:
        lines.append("leader: none elected yet (no process runs background work)")
    else:
        lines.append(f"leader: pid {leader['pid']} on {leader['host']} (console {leader['console_id']}), epoch "
                     f"{leader['epoch']}, last heartbeat {leader['heartbeat_age_seconds']:.1f} s ago")
    return "\n".join(lines)


@app.command("status")
def status(as_json: AsJson = False) -> None:
    """Show which console process answered and which one leads the scheduler (its fencing epoch, its heartbeat).

    Asks the console you are logged in to (any account)."""
    from starforge.cli.cmd_job import console_session

    out = Output(as_json=as_json)
    with console_session(out) as console:
        state = console.console_status()
    out.emit(state, _status_text)


@app.command("render")
def render(
    job_id: Annotated[str, typer.Argument(help="job id, any unambiguous prefix of one, or the experiment name")],
    kuberay: Annotated[bool, typer.Option("--kuberay", help="a KubeRay RayJob manifest (the only format)")] = False,
    as_json: AsJson = False,
) -> None:
    """Print a job rendered for an engine: `--kuberay` prints its RayJob manifest (YAML; `kubectl apply -f -`).

    Asks the console you are logged in to; you see your own jobs (an administrator, every job)."""
    from starforge.cli.cmd_job import console_session, resolve_job

    out = Output(as_json=as_json)
    if not kuberay:
        out.abort("choose what to render", hint="sf console render JOB --kuberay", code=EXIT_USAGE)
    with console_session(out) as console:
        job = resolve_job(out, console, job_id, "rendering")
        manifest = console.render(job.ref, "kuberay")
    out.emit({"job_ref": job.ref, "format": "kuberay", "manifest": manifest}, lambda d: str(d["manifest"]).rstrip("\n"))


@token_app.command("create")
def token_create(
    user: Annotated[str, typer.Option("--user", help="account name (an existing one, unless --create)")],
    role: Annotated[str | None, typer.Option("--role", help="admin, operator or viewer")] = None,
    create: Annotated[bool, typer.Option("--create", help="create the account when it does not exist")] = False,
    scrape: Annotated[bool, typer.Option("--scrape", help="a scrape token instead: good only for GET /metrics "
                                                          "(Prometheus), never for the API")] = False,
    state_dir: StateDir = None,
    database_url: DatabaseUrl = None,
    config: ConfigFile = None,
) -> None:
    """Print only a new long-lived API token of an account on stdout; an unknown account is refused unless --create.

    With --scrape, the token (owned by the account, revoked with `sf admin token revoke`) reads /metrics only."""
    from starforge.console.operator import create_scrape_token, create_token

    out = Output()
    _settings_, db = _db(state_dir, database_url, config)
    if scrape:
        print(_run(out, lambda: create_scrape_token(db, user, create=create)))
        return
    print(_run(out, lambda: create_token(db, user, role, create=create)))


@user_app.command("ls")
def user_ls(state_dir: StateDir = None, database_url: DatabaseUrl = None, config: ConfigFile = None,
            as_json: AsJson = False) -> None:
    """List accounts."""
    from starforge.console.operator import list_users

    out = Output(as_json=as_json)
    _s, db = _db(state_dir, database_url, config)
    users = list_users(db)
    out.emit(users, lambda rows: out.table([[u["username"], u["role"], "yes" if u["disabled"] else ""] for u in rows],
                                           ["user", "role", "disabled"]))


def _data_commands(kind: str, group: typer.Typer) -> None:
    @group.command("add")
    def add(
        ref: Annotated[str, typer.Argument(help="<owner>/<name>@<version>")],
        path: Annotated[Path, typer.Argument(help="directory on the console machine")],
        public: Annotated[bool, typer.Option("--public", help="readable by every account")] = False,
        grant: Annotated[list[str] | None, typer.Option("--grant", help="also readable by this account")] = None,
        state_dir: StateDir = None, database_url: DatabaseUrl = None, config: ConfigFile = None,
        as_json: AsJson = False,
    ) -> None:
        from starforge.console.operator import register_data

        out = Output(as_json=as_json)
        _s, db = _db(state_dir, database_url, config)
        asset = _run(out, lambda: register_data(db, kind, ref, str(path), public=public, grants=tuple(grant or ())))
        out.emit(asset, lambda a: f"registered {kind} {a['id']}@{a['version']} -> {a['path']} ({a['visibility']})")

    add.__doc__ = f"Register a {kind} version at a directory (versions are immutable)."

    @group.command("ls")
    def ls(state_dir: StateDir = None, database_url: DatabaseUrl = None, config: ConfigFile = None,
           as_json: AsJson = False) -> None:
        from starforge.console.operator import list_data

        out = Output(as_json=as_json)
        _s, db = _db(state_dir, database_url, config)
        rows = list_data(db, kind)
        out.emit(rows, lambda items: out.table([[a["id"], a["version"], a["visibility"], a["path"]] for a in items],
                                               [kind, "version", "visibility", "path"]))

    ls.__doc__ = f"List registered {kind} versions."


_data_commands("corpus", corpus_app)
_data_commands("dataset", dataset_app)


@quota_app.command("set")
@quota_options
def quota_set(
    user: Annotated[str, typer.Argument(help="account name")], quota: dict[str, Any],
    state_dir: StateDir = None, database_url: DatabaseUrl = None, config: ConfigFile = None, as_json: AsJson = False,
) -> None:
    """Set an account's quota."""
    from starforge.console.operator import set_quota

    out = Output(as_json=as_json)
    settings, db = _db(state_dir, database_url, config)
    result = _run(out, lambda: set_quota(db, settings, user, quota))
    out.emit(result, quota_text)


def _runtime_record(record: Any) -> dict[str, Any]:
    return {**record.to_dict(), "interpreter": record.interpreter}


@runtime_app.command("build")
def runtime_build(
    runtime_id: Annotated[str, typer.Argument(help="a runtime id of the served catalog, e.g. trl-1.10.0")],
    kind: Annotated[str | None, typer.Option("--kind", help="cpu or gpu (default: gpu when the console's series "
                                                            "have GPUs, else cpu)")] = None,
    force: Annotated[bool, typer.Option("--force", help="build again even when it is built")] = False,
    state_dir: StateDir = None, config: ConfigFile = None, as_json: AsJson = False,
) -> None:
    """Build a recipe runtime into the console's runtime cache (no console needs to run); print its venv."""
    from starforge.console.runtime import load_served_catalog
    from starforge.engines.local import detect_gpus
    from starforge.engines.runtimes import (
        KINDS,
        BuildFailed,
        Runtimes,
        UnknownRuntime,
        build_ahead,
        default_kind,
    )
    from starforge.recipes import CatalogError

    out = Output(as_json=as_json)
    if kind is not None and kind not in KINDS:
        out.abort(f"unknown kind {kind!r}", hint=f"--kind {' or --kind '.join(KINDS)}", code=EXIT_USAGE)
    settings = _settings(state_dir or Path(".starforge-console"), None, config)
    runtimes = Runtimes(settings.runtimes)
    try:
        catalog = load_served_catalog(settings)
    except CatalogError as exc:
        out.abort(f"the recipe catalog is invalid: {exc}")
    chosen = kind or default_kind([*settings.capacity, *detect_gpus()], runtimes)
    try:
        record = build_ahead(runtimes, catalog, runtime_id, chosen, out.info, force=force)
    except UnknownRuntime as exc:
        out.abort(str(exc), hint="`sf recipe ls` shows the recipes; their runtime ids are in `sf recipe show`",
                  code=EXIT_USAGE)
    except BuildFailed as exc:
        out.abort(f"the runtime {runtime_id} ({chosen}) could not be built: {exc}")
    finally:
        runtimes.shutdown()
    out.emit(_runtime_record(record), lambda r: r["path"])


@runtime_app.command("ls")
def runtime_ls(state_dir: StateDir = None, config: ConfigFile = None, as_json: AsJson = False) -> None:
    """List the runtimes built in the console's runtime cache."""
    from starforge.engines.runtimes import RuntimeCache

    out = Output(as_json=as_json)
    settings = _settings(state_dir or Path(".starforge-console"), None, config)
    cache_dir = settings.runtimes.cache_dir
    rows = [_runtime_record(r) for r in RuntimeCache(cache_dir).records()]

    def human(data: dict[str, Any]) -> str:
        if not data["runtimes"]:
            return f"no runtime is built in {data['cache_dir']}"
        return out.table([[r["runtime_id"], r["python"], r["kind"], r["torch"] or "-", human_size(r["size"]),
                           f"{r['seconds']:.0f} s", r["path"]] for r in data["runtimes"]],
                         ["runtime", "python", "kind", "torch", "size", "build", "path"])

    out.emit({"cache_dir": str(cache_dir), "runtimes": rows}, human)


@runtime_app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def runtime_run(
    ctx: typer.Context,
    runtime_id: Annotated[str, typer.Argument(help="a built runtime id, e.g. trl-1.10.0; its Python's arguments "
                                                   "follow `--`")],
    kind: Annotated[str | None, typer.Option("--kind", help="cpu or gpu (default: the one built, cpu first)")] = None,
    state_dir: StateDir = None, config: ConfigFile = None,
) -> None:
    """Run a built runtime's Python with the arguments after `--`, StarForge importable as in a job; exit with its code.

    Example: `sf console runtime run trl-1.10.0 -- -m starforge.trainers.tiny_model /srv/models/tiny --data ./data`.
    """
    import os
    import subprocess

    from starforge.engines.runtimes import KINDS, RuntimeCache, jobside_copy

    out = Output()
    if kind is not None and kind not in KINDS:
        out.abort(f"unknown kind {kind!r}", hint=f"--kind {' or --kind '.join(KINDS)}", code=EXIT_USAGE)
    if not ctx.args:
        out.abort("nothing to run", hint=f"give the Python arguments after --, e.g. `sf console runtime run "
                                         f"{runtime_id} -- -c 'import trl'`", code=EXIT_USAGE)
    settings = _settings(state_dir or Path(".starforge-console"), None, config)
    cache_dir = settings.runtimes.cache_dir
    built = [r for r in RuntimeCache(cache_dir).records() if r.runtime_id == runtime_id and kind in (None, r.kind)]
    if not built:
        which = f"{runtime_id} ({kind})" if kind else runtime_id
        build = f"sf console runtime build {runtime_id}" + (f" --kind {kind}" if kind else "")
        out.abort(f"the runtime {which} is not built in {cache_dir}", hint=f"build it first: `{build}`",
                  code=EXIT_USAGE)
    record = max(built, key=lambda r: (r.kind == "cpu", r.built_at))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(jobside_copy(cache_dir)), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([record.interpreter, *ctx.args], env=env, check=False)
    raise typer.Exit(done.returncode)


def _image_record(image: Any) -> dict[str, Any]:
    return {"digest": image.digest, "reference": image.reference, "pinned": image.pinned, "size": image.size,
            "root": str(image.root)}


@image_app.command("pull")
def image_pull(
    reference: Annotated[str, typer.Argument(help="an image of an allowlisted registry, e.g. registry.lab/team/x:2.3")],
    state_dir: StateDir = None, config: ConfigFile = None, as_json: AsJson = False,
) -> None:
    """Pull an image into the console's image cache ahead of the jobs that name it (no console needs to run)."""
    from starforge.engines.images import PullError, pull_ahead
    from starforge.recipes import image_allowed

    out = Output(as_json=as_json)
    settings = _settings(state_dir, None, config)
    if settings.image_allowlist is not None and not image_allowed(reference, settings.image_allowlist):
        out.abort(f"{reference} is not from a registry on image_allowlist, so no job may run it",
                  hint="add its registry to image_allowlist in the console configuration", code=EXIT_REFUSED)
    try:
        image = pull_ahead(settings.images, reference, out.info)
    except PullError as exc:
        out.abort(f"the image {reference} could not be pulled: {exc}")
    out.emit(_image_record(image), lambda r: f"{r['pinned']} ({human_size(r['size'])}) in {r['root']}")


@image_app.command("ls")
def image_ls(state_dir: StateDir = None, config: ConfigFile = None, as_json: AsJson = False) -> None:
    """List the images in the console's image cache."""
    from starforge.engines.images import ImageCache

    out = Output(as_json=as_json)
    settings = _settings(state_dir, None, config)
    cache_dir = settings.images.cache_dir
    rows = [_image_record(image) for image in ImageCache(cache_dir).entries()]

    def human(data: dict[str, Any]) -> str:
        if not data["images"]:
            return f"no image is in {data['cache_dir']}"
        return out.table([[r["reference"], r["digest"][:19], human_size(r["size"])] for r in data["images"]],
                         ["image", "digest", "size"])

    out.emit({"cache_dir": str(cache_dir), "images": rows}, human)
