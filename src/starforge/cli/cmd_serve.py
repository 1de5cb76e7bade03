"""`sf serve`: start an inference service of a model (a run's checkpoint, a registered model, a path or a hub id),
list, extend and stop services, chat with one (streamed), and manage its API keys.

Every command talks to `/api/services` through `Console.serving`; a refusal prints each problem at its field with
its hint and exits 1.
"""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any

import typer

from starforge.cli._api_session import api_session
from starforge.cli._output import Output

app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Serve a model behind the console's OpenAI-compatible proxy (start, ls, extend, stop, chat, key).")
key_app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False,
                      no_args_is_help=True, help="A service's API keys for tools (add, ls, rm).")
app.add_typer(key_app, name="key")

JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
ServiceId = Annotated[str, typer.Argument(metavar="ID", help="the service id (`sf serve ls` lists them)")]
_POLL_S = 2.0


def _table(out: Output, headers: Any, rows: list[list[str]]) -> str:
    from starforge.cli.cmd_job import render_table

    return render_table(out, list(headers), rows, status_col=2 if "status" in headers else None)


def _said(service: dict[str, Any]) -> str:
    from starforge.cli._serve_text import expires_text

    return (f"{service.get('id', '')}  {service.get('model', '')}  {service.get('status', '')}  "
            f"expires {expires_text(service)}")


def _wait(out: Output, console: Any, service: dict[str, Any]) -> dict[str, Any]:
    from starforge.client import READY, SERVICE_TERMINAL

    sid = str(service.get("id", ""))
    seen = str(service.get("status", ""))
    while seen != READY:
        if seen in SERVICE_TERMINAL:
            reason = str(service.get("stop_reason") or "")
            said = "failed" if seen == "failed" else "was stopped"
            out.abort(f"service {sid} {said} before it was ready" + (f": {reason}" if reason else ""),
                      hint=f"see why with `sf job logs {sid}`")
        time.sleep(_POLL_S)
        service = console.serving.get(sid)
        if service.get("status") != seen and not out.as_json:
            out.info(f"… {service.get('status')}")
        seen = str(service.get("status", ""))
    return service


@app.command("start")
def start(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="run:<run_id>, owner/name@version, a path under the "
                                                               "console's model roots, or a hub id (org/name)")],
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs of the service (0: the CPU)")] = 0,
    ttl_hours: Annotated[float | None, typer.Option("--ttl-hours", metavar="H", help="stop it after H idle hours "
                                                    "(default: the console's; capped by the operator)")] = None,
    profile: Annotated[str, typer.Option("--profile", "-p", help="a hardware profile of the console's registry")] = "",
    name: Annotated[str, typer.Option("--name", help="a name for the service")] = "",
    wait: Annotated[bool, typer.Option("--wait", help="wait until it answers, then print how to reach it")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Start a service of MODEL; exit 0 started (or ready with --wait), 1 refused or failed."""
    out = Output(as_json=as_json)
    with api_session(out) as console:
        service = console.serving.start(model, gpus=gpus, ttl_hours=ttl_hours, profile=profile, name=name)
        if not as_json:
            out.success(f"Service {service.get('id')} of {service.get('model')} is {service.get('status')}")
        if wait:
            service = _wait(out, console, service)
        server = console.server
    _show_started(out, server, service, waited=wait)


def _show_started(out: Output, server: str, service: dict[str, Any], *, waited: bool) -> None:
    from starforge.cli._serve_text import connect_text

    sid = service.get("id", "")
    if out.as_json:
        out.emit(service)
        return
    out.line(connect_text(server, service))
    if waited:
        out.success(f"Service {sid} is ready; it stops itself {_expiry(service)}")
        out.hint(f'try it: sf serve chat {sid} "Hello"')
    else:
        out.hint(f"it answers once `sf serve ls` shows it ready; `sf serve chat {sid} \"Hello\"` then")


def _expiry(service: dict[str, Any]) -> str:
    from starforge.cli._serve_text import expires_text, when_text

    return f"{expires_text(service)} ({when_text(service.get('expires_at'))}) unless used or extended"


@app.command("ls")
def ls(all_: Annotated[bool, typer.Option("--all", help="stopped and failed services too")] = False,
       as_json: JsonOpt = False) -> None:
    """List your services (running ones; --all: every one)."""
    from starforge.cli._serve_text import SERVICE_HEADERS, service_rows

    out = Output(as_json=as_json)
    with api_session(out) as console:
        rows = console.serving.list(all=all_)
    out.emit({"services": rows}, lambda _: _table(out, SERVICE_HEADERS, service_rows(rows)) if rows else None)
    if not rows and not as_json:
        out.info("No service is running." if not all_ else "You have no service.")
        out.hint("start one with `sf serve start run:<run_id>`")


@app.command("extend")
def extend(service_id: ServiceId,
           hours: Annotated[float | None, typer.Option("--hours", metavar="H", help="hours to add (default: the "
                                                       "console's default TTL; capped by the operator)")] = None,
           as_json: JsonOpt = False) -> None:
    """Keep a service longer: move its expiry H hours later."""
    out = Output(as_json=as_json)
    with api_session(out) as console:
        service = console.serving.extend(service_id, hours)
    out.emit(service, _said)
    if not as_json:
        out.success(f"Service {service.get('id')} now stops itself {_expiry(service)}")


@app.command("stop")
def stop(service_id: ServiceId, as_json: JsonOpt = False) -> None:
    """Stop a service (its keys stop working with it)."""
    out = Output(as_json=as_json)
    with api_session(out) as console:
        service = console.serving.stop(service_id)
    out.emit(service, _said)
    if not as_json:
        out.success(f"Service {service.get('id')} is {service.get('status')}")


@app.command("chat")
def chat(service_id: ServiceId,
         message: Annotated[str, typer.Argument(metavar="MESSAGE", help="what to say to the model")],
         max_tokens: Annotated[int | None, typer.Option("--max-tokens", metavar="N", min=1,
                                                        help="at most N tokens of answer")] = None,
         system: Annotated[str, typer.Option("--system", help="a system message before yours")] = "",
         as_json: JsonOpt = False) -> None:
    """Send MESSAGE to the service and print its answer as it streams (--json: the whole answer once)."""
    out = Output(as_json=as_json)
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": message}]
    parts: list[str] = []
    with api_session(out) as console:
        for delta in console.serving.chat(service_id, messages, max_tokens=max_tokens):
            parts.append(delta)
            if not as_json:
                sys.stdout.write(delta)
                sys.stdout.flush()
    if as_json:
        out.emit({"id": service_id, "content": "".join(parts)})
    else:
        sys.stdout.write("\n")


@key_app.command("add")
def key_add(service_id: ServiceId,
            name: Annotated[str, typer.Option("--name", help="what the key is for")] = "",
            as_json: JsonOpt = False) -> None:
    """Create an API key of the service for a tool; it is shown this once."""
    out = Output(as_json=as_json)
    with api_session(out) as console:
        created = console.serving.add_key(service_id, name)
        url = console.serving.url(service_id)
    out.emit(created, lambda k: str(k.get("key", "")))
    if not as_json:
        out.success(f"Key {created.get('id')} of service {service_id} created: copy it now, it is not shown again")
        out.hint(f"use it as the api_key of an OpenAI client with base_url {url}")


@key_app.command("ls")
def key_ls(service_id: ServiceId, as_json: JsonOpt = False) -> None:
    """List the service's keys (their prefixes, never the secrets)."""
    from starforge.cli._serve_text import KEY_HEADERS, key_rows

    out = Output(as_json=as_json)
    with api_session(out) as console:
        keys = console.serving.keys(service_id)
    out.emit({"keys": keys}, lambda _: _table(out, KEY_HEADERS, key_rows(keys)) if keys else None)
    if not keys and not as_json:
        out.info(f"Service {service_id} has no key.")
        out.hint(f"create one with `sf serve key add {service_id} --name my-tool`")


@key_app.command("rm")
def key_rm(service_id: ServiceId,
           key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="the key's id (`sf serve key ls ID`)")],
           as_json: JsonOpt = False) -> None:
    """Revoke a key of the service: refused from its next request on."""
    out = Output(as_json=as_json)
    with api_session(out) as console:
        revoked = console.serving.revoke_key(service_id, key_id)
    out.emit(revoked, lambda r: f"{r.get('id')}  revoked")
    if not as_json:
        out.success(f"Key {revoked.get('id')} of service {service_id} is revoked")
