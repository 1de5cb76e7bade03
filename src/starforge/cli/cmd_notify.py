"""`sf notify`: webhooks on your jobs' state changes (add, ls, rm) and their delivery log.

Every command talks to `/api/notify` through `Console.notify`; a refusal prints each problem at its field with its
hint and exits 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer

from starforge.cli._api_session import api_session
from starforge.cli._output import Output

app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Webhooks on your jobs' state changes: add, ls, rm, and the delivery log.")

JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
HOOK_HEADERS = ("id", "url", "events", "secret", "created", "delivered", "pending", "failed")
LOG_HEADERS = ("id", "hook", "job", "event", "state", "tries", "last", "next")


def _table(out: Output, headers: Sequence[str], rows: list[list[str]]) -> str:
    from starforge.cli.cmd_job import render_table

    return render_table(out, list(headers), rows)


def _hook_rows(hooks: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    from starforge.cli._serve_text import when_text

    rows = []
    for h in hooks:
        counts = h.get("deliveries") or {}
        rows.append([str(h.get("id", "")), str(h.get("url", "")), ",".join(h.get("events") or ()),
                     f"{h.get('secret_prefix', '')}…", when_text(h.get("created_at")),
                     *(str(counts.get(k, 0)) for k in ("delivered", "pending", "failed"))])
    return rows


def _last(d: Mapping[str, Any]) -> str:
    if d.get("last_status") is not None:
        return str(d["last_status"]) + (f" {d['last_error']}" if d.get("last_error") and d["state"] != "delivered"
                                        else "")
    return str(d.get("last_error") or "")


def _log_rows(deliveries: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    from starforge.cli._serve_text import when_text

    return [[str(d.get("id", "")), str(d.get("hook_id", "")), str(d.get("job_ref", "")), str(d.get("event", "")),
             str(d.get("state", "")), str(d.get("attempts", 0)), _last(d)[:60],
             when_text(d.get("next_at")) if d.get("next_at") else ""] for d in deliveries]


@app.command("add")
def add(url: Annotated[str, typer.Argument(metavar="URL", help="where to POST the events (http or https)")],
        events: Annotated[str | None, typer.Option("--events", metavar="E1,E2", help="events to send: queued, "
                          "running, paused, preempted, succeeded, failed, stopped (default: succeeded,failed,"
                          "preempted)")] = None,
        as_json: JsonOpt = False) -> None:
    """Add a webhook; its signing secret is printed this once."""
    out = Output(as_json=as_json)
    wanted = [e.strip() for e in events.split(",")] if events is not None else None
    with api_session(out) as console:
        hook = console.notify.add(url, wanted)
    out.emit(hook, lambda h: str(h.get("secret", "")))
    if not as_json:
        out.success(f"Webhook {hook.get('id')} sends {','.join(hook.get('events') or ())} to {hook.get('url')}: "
                    "copy its secret now, it is not shown again")
        out.hint("check each request's X-StarForge-Signature with it (docs/cli.md#sf-notify)")


@app.command("ls")
def ls(as_json: JsonOpt = False) -> None:
    """List your webhooks (secret prefixes, never the secrets) with their deliveries by state."""
    out = Output(as_json=as_json)
    with api_session(out) as console:
        hooks = console.notify.list()
    out.emit({"hooks": hooks}, lambda _: _table(out, HOOK_HEADERS, _hook_rows(hooks)) if hooks else None)
    if not hooks and not as_json:
        out.info("You have no webhook.")
        out.hint("add one with `sf notify add https://hooks.example.com/starforge`")


@app.command("rm")
def rm(hook_id: Annotated[int, typer.Argument(metavar="ID", help="the webhook's id (`sf notify ls`)")],
       as_json: JsonOpt = False) -> None:
    """Remove a webhook and its delivery log; nothing more is sent to it."""
    out = Output(as_json=as_json)
    with api_session(out) as console:
        removed = console.notify.remove(hook_id)
    out.emit(removed, lambda r: f"{r.get('id')}  removed")
    if not as_json:
        out.success(f"Webhook {removed.get('id')} ({removed.get('url')}) is removed")


@app.command("log")
def log(hook_id: Annotated[int | None, typer.Argument(metavar="[ID]", help="only this webhook's deliveries")] = None,
        limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=500, help="deliveries to show")] = 50,
        as_json: JsonOpt = False) -> None:
    """Show your deliveries, newest first: each one's state, attempts, last answer and next retry."""
    out = Output(as_json=as_json)
    with api_session(out) as console:
        deliveries = console.notify.log(hook_id, limit=limit)
    out.emit({"deliveries": deliveries},
             lambda _: _table(out, LOG_HEADERS, _log_rows(deliveries)) if deliveries else None)
    if not deliveries and not as_json:
        out.info("No delivery yet.")
