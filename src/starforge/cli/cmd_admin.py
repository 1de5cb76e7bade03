"""`sf admin`: administer a console over its API with an administrator's token: accounts, quotas, fair-share
weights, API tokens and maintenance mode."""

from __future__ import annotations

import math
import time
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from starforge.cli import _quota_options as q
from starforge.cli._api_session import api_session
from starforge.cli._job_text import age
from starforge.cli._output import EXIT_USAGE, Output
from starforge.cli._since import parse_duration
from starforge.cli.cmd_job import render_table

if TYPE_CHECKING:
    from starforge.client import Console

app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Administer a console over its API (an administrator's token): users, quotas, shares, "
                       "tokens, maintenance.")
user_app = typer.Typer(no_args_is_help=True, help="Accounts and roles (ls, create, role, disable, enable).")
quota_app = typer.Typer(no_args_is_help=True, help="Per-account quotas (show, set).")
token_app = typer.Typer(no_args_is_help=True, help="Long-lived API tokens for accounts (create, ls, revoke).")
share_app = typer.Typer(no_args_is_help=True, help="Fair share: each account's weight, share, usage and borrowing "
                                                   "(show, set).")
app.add_typer(user_app, name="user")
app.add_typer(quota_app, name="quota")
app.add_typer(token_app, name="token")
app.add_typer(share_app, name="share")
maintenance_app = typer.Typer(help="Maintenance mode (show, drain, resume): drain before restarting the console.")
app.add_typer(maintenance_app, name="maintenance")

JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
UserArg = Annotated[str, typer.Argument(metavar="NAME", help="account name")]
_ADMIN_HINT = "these commands need an administrator's token: `sf whoami` shows your role, and an admin logs in with " \
              "`sf login --token TOKEN`"


def _session(out: Output) -> AbstractContextManager[Console]:
    return api_session(out, forbidden_hint=_ADMIN_HINT)


def _account_line(user: dict[str, Any]) -> str:
    return f"{user.get('username')} ({user.get('role')}{', disabled' if user.get('disabled') else ''})"


# ---- users ---------------------------------------------------------------------------------------------------------

@user_app.command("ls")
def user_ls(as_json: JsonOpt = False) -> None:
    """List every account: name, role, email, whether it is disabled."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        users = console.admin_users()
    out.emit({"users": users}, lambda _: render_table(out, ["user", "role", "email", "disabled", "auth"], [
        [u.get("username"), u.get("role"), u.get("email") or "", "yes" if u.get("disabled") else "",
         u.get("auth_source", "")] for u in users]))


@user_app.command("create")
def user_create(
    name: UserArg,
    role: Annotated[str | None, typer.Option("--role", help="admin, operator (default) or viewer")] = None,
    email: Annotated[str | None, typer.Option("--email", help="contact address")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an account; print its first API token (shown once) on stdout."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        created = console.admin_create_user(name, role=role, email=email)
    out.emit(created, lambda c: str(c.get("token", "")))
    if not as_json:
        out.success(f"Created {_account_line(created.get('user') or {})}; its API token is on stdout (shown once)")
        out.hint(f"they log in with `sf login --server {console.server} --token TOKEN`")


@user_app.command("role")
def user_role(name: UserArg, role: Annotated[str, typer.Argument(metavar="ROLE", help="admin, operator or viewer")],
              as_json: JsonOpt = False) -> None:
    """Change an account's role."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        user = console.admin_set_role(name, role)
    out.emit(user, lambda u: None)
    if not as_json:
        out.success(f"{user.get('username')} is now {user.get('role')}")


def _set_disabled(name: str, disabled: bool, as_json: bool) -> None:
    out = Output(as_json=as_json)
    with _session(out) as console:
        user = console.admin_set_disabled(name, disabled)
    out.emit(user, lambda u: None)
    if not as_json:
        out.success(f"{'Disabled' if disabled else 'Enabled'} {_account_line(user)}"
                    + ("; its tokens are revoked and its jobs stopped" if disabled else ""))
        if not disabled:
            out.hint(f"its old tokens stay revoked: `sf admin token create {name}` makes a new one")


@user_app.command("disable")
def user_disable(name: UserArg, as_json: JsonOpt = False) -> None:
    """Disable an account: every token it holds is revoked and its unfinished jobs are stopped."""
    _set_disabled(name, True, as_json)


@user_app.command("enable")
def user_enable(name: UserArg, as_json: JsonOpt = False) -> None:
    """Enable a disabled account again (its revoked tokens stay revoked)."""
    _set_disabled(name, False, as_json)


# ---- quotas --------------------------------------------------------------------------------------------------------

@quota_app.command("show")
def quota_show(name: UserArg, as_json: JsonOpt = False) -> None:
    """Show an account's quota (the console's defaults when none was set)."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        quota = console.admin_quota(name)
    out.emit(quota, q.quota_text)


@quota_app.command("set")
@q.quota_options
def quota_set(name: UserArg, quota: dict[str, Any], as_json: JsonOpt = False) -> None:
    """Set an account's quota; the values not given keep theirs."""
    out = Output(as_json=as_json)
    values = quota
    if not values:
        out.abort("nothing to set", hint=f"e.g. `sf admin quota set {name} --gpus 8 --jobs 2`", code=EXIT_USAGE)
    with _session(out) as console:
        quota = console.admin_set_quota(name, values)
    out.emit(quota, q.quota_text)


# ---- fair share ----------------------------------------------------------------------------------------------------

SHARE_HEADERS = ("account", "weight", "series", "share", "usage gpu-h", "allocated", "borrowed", "waiting")


def _count(value: Any) -> str:
    """Return a number as a table shows it (`8`, `12.5`, `0.042`, `1234`), or `-`."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "-"
    if not math.isfinite(value):
        return str(value)
    if value == int(value):
        return str(int(value))
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def share_rows(lines: list[dict[str, Any]]) -> list[list[str]]:
    """Return the rows of `sf admin share show`: one per account and series it has a share, usage or GPUs on (one
    row with `-` for an account with none); its weight and waiting jobs on its first row."""
    rows = []
    for line in lines:
        per: dict[str, dict[str, Any]] = {}
        for key in ("share", "usage_gpu_hours", "allocated", "borrowed"):
            values = line.get(key)
            per[key] = values if isinstance(values, dict) else {}
        series = sorted({name for values in per.values() for name in values}) or ["-"]
        for index, name in enumerate(series):
            first = index == 0
            rows.append([str(line.get("username", "?")) if first else "", _count(line.get("weight")) if first else "",
                         name, _count(per["share"].get(name)), _count(per["usage_gpu_hours"].get(name)),
                         _count(per["allocated"].get(name)), _count(per["borrowed"].get(name)),
                         _count(line.get("waiting_jobs")) if first else ""])
    return rows


def _shares_text(out: Output, body: dict[str, Any]) -> str:
    fair = body.get("fair_share") or {}
    state = (f"fair share {'on' if fair.get('enabled', True) else 'off'}: usage decays with a half-life of "
             f"{_count(fair.get('half_life_hours'))} h; an account no one set has weight "
             f"{_count(fair.get('default_weight'))}")
    lines = [line for line in body.get("shares") or [] if isinstance(line, dict)]
    return state + ("\n\n" + render_table(out, SHARE_HEADERS, share_rows(lines)) if lines else "\nno account yet")


@share_app.command("show")
def share_show(as_json: JsonOpt = False) -> None:
    """Show each account's weight and, per series, its share (GPUs it is entitled to while others wait), decayed
    usage (GPU-hours), the GPUs it holds and borrows beyond its share, and its waiting jobs."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        body = console.admin_shares()
    out.emit(body, lambda b: _shares_text(out, b))


@share_app.command("set")
def share_set(
    name: UserArg,
    weight: Annotated[float, typer.Argument(metavar="WEIGHT", help="a number above 0: 2 is entitled to twice the "
                                                                   "share of 1 (the default weight)")],
    as_json: JsonOpt = False,
) -> None:
    """Set an account's fair-share weight; the queue is ordered by it from the scheduler's next cycle."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        done = console.admin_set_share(name, weight)
    out.emit(done, lambda d: None)
    if not as_json:
        out.success(f"{done.get('username', name)} now has weight {_count(done.get('weight', weight))}")
        out.hint("sf admin share show")


# ---- tokens --------------------------------------------------------------------------------------------------------

def _expiry(epoch: Any) -> str:
    if not isinstance(epoch, int | float):
        return "never"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


@token_app.command("create")
def token_create(
    name: UserArg,
    expires: Annotated[str | None, typer.Option("--expires", help="lifetime such as 30d, 12h or 1w "
                                                                  "(default: never expires)")] = None,
    label: Annotated[str | None, typer.Option("--name", help="what the token is for, e.g. ci-nightly")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an API token for an account; print only the token on stdout (shown once)."""
    out = Output(as_json=as_json)
    seconds = None
    if expires is not None:
        seconds = parse_duration(expires)
        if seconds is None or seconds <= 0:
            out.abort(f"--expires {expires!r} is not a duration", hint="use e.g. 12h, 30d or 1w", code=EXIT_USAGE)
    with _session(out) as console:
        created = console.admin_create_token(name, name=label, expires_in=seconds)
    out.emit(created, lambda c: str(c.get("token", "")))
    if not as_json:
        out.success(f"Created API token {created.get('id')} for {created.get('username')} "
                    f"(expires: {_expiry(created.get('expires_at'))}); it is shown only this once")
        out.hint(f"revoke it with `sf admin token revoke {created.get('id')}`")


@token_app.command("ls")
def token_ls(name: UserArg, as_json: JsonOpt = False) -> None:
    """List an account's API tokens (ids, names, status, dates; never the secrets)."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        tokens = console.admin_tokens(name)

    def table(_: Any) -> str | None:
        if not tokens:
            return None
        return render_table(out, ["id", "name", "status", "created", "expires", "last used"], [
            [t.get("id"), t.get("name"), t.get("status"), age(t.get("created_at")), _expiry(t.get("expires_at")),
             age(t.get("last_used_at"))] for t in tokens], status_col=2)

    out.emit({"username": name, "tokens": tokens}, table)
    if not tokens and not as_json:
        out.info(f"{name} has no API token.")
        out.hint(f"create one with `sf admin token create {name}`")


@token_app.command("revoke")
def token_revoke(token_id: Annotated[str, typer.Argument(metavar="ID", help="the token's id (`sf admin token ls "
                                                                             "NAME`)")],
                 as_json: JsonOpt = False) -> None:
    """Revoke an API token: it is refused from its next request on."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        revoked = console.admin_revoke_token(token_id)
    out.emit(revoked, lambda r: None)
    if not as_json:
        out.success(f"Revoked API token {revoked.get('id')} of {revoked.get('username')}")


# ---- maintenance mode ----------------------------------------------------------------------------------------------

def _maintenance_text(state: dict[str, Any]) -> str:
    on = bool(state.get("maintenance_mode"))
    lines = [f"maintenance mode: {'on' if on else 'off'}" + (f" — {state['note']}" if state.get("note") else "")]
    if state.get("by"):
        lines[0] += f" (switched by {state['by']}, {_expiry(state.get('since'))})"
    blockers = [str(b) for b in state.get("blockers") or []]
    lines.append(f"active jobs: {state.get('remaining_active', len(blockers))}"
                 + (f" ({', '.join(blockers[:10])}{', …' if len(blockers) > 10 else ''})" if blockers else ""))
    if on:
        lines.append("safe to restart: " + ("yes" if state.get("safe_to_restart") else "no (jobs still active)"))
    return "\n".join(lines)


@maintenance_app.callback(invoke_without_command=True)
def maintenance_default(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Show maintenance mode (`sf admin maintenance` alone is `show`)."""
    if ctx.invoked_subcommand is None:
        maintenance_show(as_json)


@maintenance_app.command("show")
def maintenance_show(as_json: JsonOpt = False) -> None:
    """Show maintenance mode, the jobs still active and whether the console may be restarted now."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        state = console.admin_maintenance()
    out.emit(state, _maintenance_text)


@maintenance_app.command("drain")
def maintenance_drain(note: Annotated[str | None, typer.Option("--note", help="what users are told while it is on "
                                                                             "(e.g. back at 14:00 UTC)")] = None,
                      as_json: JsonOpt = False) -> None:
    """Turn maintenance mode on: new submissions are refused (503, with the note), running jobs run on and queued
    jobs wait; restart once `safe_to_restart` (`sf admin maintenance show`)."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        state = console.admin_maintenance_drain(note)
    out.emit(state, _maintenance_text)
    if not as_json and not state.get("safe_to_restart"):
        out.hint("watch `sf admin maintenance show` until it says safe to restart")


@maintenance_app.command("resume")
def maintenance_resume(as_json: JsonOpt = False) -> None:
    """Turn maintenance mode off: submissions are accepted again and queued jobs are placed."""
    out = Output(as_json=as_json)
    with _session(out) as console:
        state = console.admin_maintenance_resume()
    out.emit(state, lambda _: None)
    if not as_json:
        out.success("Maintenance mode is off: submissions are accepted again")
