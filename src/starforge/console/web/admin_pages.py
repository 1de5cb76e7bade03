"""The administrators' page and its forms: accounts, an account's API tokens and quota, maintenance mode, each form
checked for its CSRF token and then handed to the same service as `/api/admin/*` (`admin`, which issues through
`api_tokens`; `maintenance`).

Tier: use case (the services called own their transactions; no HTTP here). A refused form is shown again with each
problem at its field (the service's own problems: a bad username, an unknown account, a number out of range); a new
API token's secret is shown once, on the answer to the form that made it, and never again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from ...wire.quota_fields import INTEGER, NAMES, NUMBER, SETTABLE
from ..services import maintenance
from ..services.accounts import admin, roles
from ..services.context import Runtime
from ..services.errors import Conflict, Forbidden, NotFound, Rejected
from .pages import frame
from .render import render
from .sessions import WebCaller, check_csrf

__all__ = ["FormAnswer", "FormView", "admin_only", "admin_page", "create_account", "create_token", "form_number",
           "revoke_token", "set_maintenance", "set_quota"]

# the caps of the quota table `sf admin quota set` sets (`cli/_quota_options.py`), as the `/api/admin/quotas` body
# names them, in the order both show them; each an input of the quota form
QUOTA_FIELDS = tuple(cap.name for cap in SETTABLE)
_INPUT_ATTRS = {INTEGER: 'inputmode="numeric"', NUMBER: 'inputmode="decimal"',
                NAMES: 'autocomplete="off" spellcheck="false"'}
QUOTA_INPUTS = tuple({"id": cap.form_id, "name": cap.name, "label": cap.label, "hint": cap.hint,
                      "attrs": _INPUT_ATTRS[cap.type]} for cap in SETTABLE)
_LISTS = frozenset(cap.name for cap in SETTABLE if cap.type == NAMES)  # a comma list on the form
_FIELDS = {"account": ("username", "role", "email"), "token": ("name", "expires_in"), "quota": QUOTA_FIELDS}
_DONE = {"quota": "Quota saved.", "revoked": "API token revoked: it is refused from its next request on.",
         "drained": "Maintenance mode is on: new work is refused, running jobs run on, queued jobs wait.",
         "resumed": "Maintenance mode is off: submissions are accepted and queued jobs are placed again."}
_DAY = 86400
LIFETIMES = (("", "never expires"), (str(_DAY), "1 day"), (str(7 * _DAY), "7 days"), (str(30 * _DAY), "30 days"),
             (str(90 * _DAY), "90 days"), (str(365 * _DAY), "365 days"))


@dataclass(frozen=True)
class FormView:
    """One form of the admin page as shown: the values in its fields and each field's problem (`errors`), with the
    problems naming no field of the form (`others`)."""

    values: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    others: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FormAnswer:
    """What an admin form answers: a page (`html`, with its HTTP status) or, once done, a redirect to `location`."""

    status: int
    html: str = ""
    location: str = ""


def admin_only(caller: WebCaller, csrf: str | None = None) -> None:
    """Refuse (403) anyone but an administrator, and a form without the session's CSRF token (`csrf` given)."""
    if csrf is not None:
        check_csrf(caller, csrf)
    if not roles.can_admin(caller.user):
        raise Forbidden("administrators only")


def _refused(name: str, values: dict[str, str], refused: Rejected | NotFound | Conflict) -> FormView:
    """Return the form `name` again with the service's problems at their fields (its detail at `username` when it
    names none: an account already taken, or not found)."""
    errors: dict[str, str] = {}
    for problem in refused.problems or []:
        text = problem.message + (f" — {problem.hint}" if problem.hint else "")
        errors[problem.field] = f"{errors[problem.field]}; {text}" if problem.field in errors else text
    if not errors:
        errors["username"] = refused.detail
    shown = _FIELDS[name]
    return FormView(values, {k: v for k, v in errors.items() if k in shown},
                    [f"{k}: {v}" for k, v in errors.items() if k not in shown])


def _account(rt: Runtime, username: str, quota_form: FormView | None) -> dict[str, Any]:
    quota = admin.get_quota(rt, username=username)
    tokens = admin.list_tokens(rt, username=username)["tokens"]
    current = {key: ", ".join(quota[key]) if key in _LISTS else str(quota[key]) for key in QUOTA_FIELDS}
    shown = quota_form or FormView(current)
    return {"username": username, "quota": quota, "tokens": tokens, "quota_form": shown}


def admin_page(rt: Runtime, caller: WebCaller, *, account: str = "", done: str = "",
               forms: dict[str, FormView] | None = None) -> str:
    """Return the administrators' page (403 for anyone else): every account with its role, state and quota,
    maintenance mode, the form creating an account and, for the account asked for, its API tokens (revoke, create)
    and its quota form; `forms` are forms shown again with their problems."""
    admin_only(caller)
    forms = forms or {}
    users = admin.list_users(rt)["users"]
    quotas = {u["username"]: admin.get_quota(rt, username=u["username"]) for u in users}
    managed, unknown = None, ""
    if account:
        try:
            managed = _account(rt, account, forms.get("quota"))
        except NotFound as missing:
            unknown = missing.detail
    return render("admin.html", **frame(caller, "admin"), users=users, quotas=quotas, roles=roles.ROLES,
                  role_options=[(role, role) for role in roles.ROLES],
                  maintenance=maintenance.status(rt), quota_inputs=QUOTA_INPUTS,
                  account=account[:64], managed=managed, unknown=unknown, done=_DONE.get(done, ""),
                  account_form=forms.get("account") or FormView({"role": "operator"}),
                  token_form=forms.get("token") or FormView(), lifetimes=LIFETIMES)


def create_account(rt: Runtime, caller: WebCaller, *, values: dict[str, str], csrf: str) -> FormAnswer:
    """Create an account `{username, role, email}` (`admin.create_user`) and show its first API token once; a
    refused form is the admin page again with the problem at its field."""
    admin_only(caller, csrf)
    values = {**values, "role": values.get("role") or "operator"}  # shown again, a blank role stays the default
    try:
        created = admin.create_user(rt, body=dict(values))
    except (Rejected, Conflict) as refused:
        page = admin_page(rt, caller, forms={"account": _refused("account", values, refused)})
        return FormAnswer(refused.status, page)
    user = created["user"]
    return FormAnswer(200, render("admin_secret.html", **frame(caller, "admin"), username=user["username"],
                                  heading=f"Account {user['username']} created ({user['role']})",
                                  secret=created["token"], about="its first API token"))


def form_number(text: str) -> Any:
    """Return a form's number as the API body carries it (int, else float); other text is sent as it is, for the
    service to refuse at its field."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def create_token(rt: Runtime, caller: WebCaller, *, username: str, name: str, expires_in: str,
                 csrf: str) -> FormAnswer:
    """Create an API token for `username` (`admin.create_token`, the body of `POST /api/admin/tokens`) and show its
    secret once; a refused form is the account's section again with the problem at its field."""
    admin_only(caller, csrf)
    body: dict[str, Any] = {"username": username, "name": name}
    if expires_in.strip():
        body["expires_in"] = form_number(expires_in.strip())
    try:
        created = admin.create_token(rt, body=body)
    except (Rejected, NotFound) as refused:
        form = _refused("token", {"name": name, "expires_in": expires_in}, refused)
        return FormAnswer(refused.status, admin_page(rt, caller, account=username, forms={"token": form}))
    return FormAnswer(200, render("admin_secret.html", **frame(caller, "admin"), username=created["username"],
                                  heading=f"API token {created['id']} created for {created['username']}",
                                  secret=created["token"], about=f"the token “{created['name']}”"))


def revoke_token(rt: Runtime, caller: WebCaller, *, token_id: str, csrf: str) -> FormAnswer:
    """Revoke an API token (`admin.revoke_token`; NotFound for no such token) and show its account again."""
    admin_only(caller, csrf)
    revoked = admin.revoke_token(rt, token_id=token_id)
    return FormAnswer(303, location=_account_url(revoked["username"], "revoked"))


def _account_url(username: str, done: str) -> str:
    return "/ui/admin?" + urlencode({"user": username, "done": done}) + "#account"


def set_quota(rt: Runtime, caller: WebCaller, *, username: str, values: dict[str, str], csrf: str) -> FormAnswer:
    """Set an account's quota from its form (`admin.set_quota`, the body of `POST /api/admin/quotas`): a blank number
    keeps its value, as `sf admin quota set` does for an option not given; profiles are a comma list (blank: every
    profile). A refused form is shown again with each problem at its field."""
    admin_only(caller, csrf)
    body: dict[str, Any] = {"username": username}
    for key in QUOTA_FIELDS:
        text = values.get(key, "").strip()
        if key in _LISTS:
            body[key] = [name.strip() for name in text.split(",") if name.strip()]
        elif text:
            body[key] = form_number(text)
    try:
        admin.set_quota(rt, body=body)
    except (Rejected, NotFound) as refused:
        form = _refused("quota", values, refused)
        return FormAnswer(refused.status, admin_page(rt, caller, account=username, forms={"quota": form}))
    return FormAnswer(303, location=_account_url(username, "quota"))


def set_maintenance(rt: Runtime, caller: WebCaller, *, on: bool, note: str, csrf: str) -> FormAnswer:
    """Turn maintenance mode on with `note` (`maintenance.drain`, as `POST /api/admin/maintenance/drain`) or off
    (`maintenance.resume`), then show the admin page again."""
    admin_only(caller, csrf)
    if on:
        maintenance.drain(rt, by=caller.user.username, body={"note": note})
    else:
        maintenance.resume(rt, by=caller.user.username)
    return FormAnswer(303, location="/ui/admin?" + urlencode({"done": "drained" if on else "resumed"}))
