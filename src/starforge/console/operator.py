"""Operator actions on a state directory's database without a running console (`sf console token|user|corpus`).

Each function is a use case (it owns its transaction) over a `Database` opened here instead of a running console's
`Runtime`; the rules are the services' own, and a refusal is their `ConsoleError` (named here, so the CLI never
reaches into the services).
"""

from __future__ import annotations

from typing import Any

from ..contract import Problem, parse_versioned_ref
from .services.accounts import credentials as accounts
from .services.errors import ConsoleError, Rejected
from .services.quota import caps as quota
from .services.registries import data
from .settings import Settings
from .store import Database

__all__ = ["ConsoleError", "create_scrape_token", "create_token", "list_data", "list_users", "open_database", "register_data", "set_quota"]


def open_database(settings: Settings) -> Database:
    """Open (and migrate) the console database of `settings`."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.db_url, changes=settings.accounts_changes)
    db.migrate()
    return db


def create_token(db: Database, username: str, role: str | None = None, name: str = "", *,
                 create: bool = False) -> str:
    """Return a new long-lived API token of account `username`; with `create`, a missing account is created (role
    default operator), else it is refused with the closest existing names (a typo never makes an account)."""
    with db.write() as session:
        if not create:
            _require_account(session, username)
        user = accounts.ensure_user(session, username, role)
        return accounts.issue_api_token(session, user, name or "created with sf console token create")


def create_scrape_token(db: Database, username: str, *, create: bool = False) -> str:
    """Return a new scrape token owned by account `username`: good only for `/metrics` (Prometheus'
    `authorization: credentials:`), never for the API; revoked like an API token (`sf admin token revoke`)."""
    with db.write() as session:
        if not create:
            _require_account(session, username)
        user = accounts.ensure_user(session, username)
        return accounts.issue_scrape_token(session, user, "created with sf console token create --scrape")


def _require_account(session: Any, username: str) -> None:
    import difflib

    names = [u.username for u in accounts.list_users(session)]
    if username in names:
        return
    close = difflib.get_close_matches(username, names, n=3, cutoff=0.6)
    guess = f"did you mean {' or '.join(close)}? " if close else ""
    raise Rejected("No token was created", [Problem(
        "user", "account_unknown", f"there is no account {username!r} on this console",
        f"{guess}`sf console user ls` lists the accounts; pass --create to create {username!r}",
        {"got": username, **({"suggestion": {username: close[0]}} if close else {})})])


def list_users(db: Database) -> list[dict[str, Any]]:
    """Return every account."""
    with db.read() as session:
        return [u.to_dict() for u in accounts.list_users(session)]


def register_data(
    db: Database, kind: str, ref_text: str, path: str, *, public: bool = False, grants: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Register a data asset version at a directory."""
    ref, problems = parse_versioned_ref(ref_text.strip(), "ref")
    if ref is None:
        raise Rejected("Invalid registration", problems or [Problem("ref", "invalid_reference", "ref is required")])
    with db.write() as session:
        return data.register(session, kind, ref, path, visibility="public" if public else "private",
                             grants=grants).to_dict()


def list_data(db: Database, kind: str) -> list[dict[str, Any]]:
    """Return every registered version of a kind (the operator on the console machine sees all of them)."""
    with db.read() as session:
        return [a.to_dict() for a in data.list_assets(session, kind, None)]


def set_quota(db: Database, settings: Settings, username: str, values: dict[str, Any]) -> dict[str, Any]:
    """Set an account's quota (missing keys keep their value)."""
    with db.write() as session:
        user = accounts.get_user(session, username)
        return {"username": username, **quota.set_quota(session, user, values, settings.quota).to_dict()}
