"""The administrator's token API on an in-process console (SQLite, no background loop): who may call it, what a
request may hold, that listings never carry a secret or a hash, and that a revoked token is refused at once."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from starforge.console import operator
from starforge.console.app import create_app
from starforge.console.services.accounts.api_tokens import MAX_TTL
from starforge.console.settings import load_settings


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
        app = create_app(load_settings(state_dir=tmp_path_factory.mktemp("admin-tokens"), run_background=False))
    rt = app.state.runtime
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, rt
    rt.db.dispose()


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _auth(rt: Any, username: str, role: str = "operator") -> dict[str, str]:
    return _bearer(operator.create_token(rt.db, username, role, create=True))


def _problem(response: Any, field: str) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    found = [p for p in response.json()["problems"] if p["field"] == field]
    assert found and found[0]["hint"], response.json()
    return found[0]


def test_only_administrators_reach_the_token_routes(api: tuple[TestClient, Any]) -> None:
    client, rt = api
    operator_headers = _auth(rt, "olga")
    for method, path, body in (("POST", "/api/admin/tokens", {"username": "olga"}),
                               ("GET", "/api/admin/tokens?username=olga", None),
                               ("DELETE", "/api/admin/tokens/1", None)):
        answer = client.request(method, path, json=body, headers=operator_headers)
        assert answer.status_code == 403 and answer.json()["detail"] == "administrators only", (path, answer.text)
    assert client.get("/api/admin/tokens?username=olga").status_code == 401


def test_a_token_request_is_checked_field_by_field(api: tuple[TestClient, Any]) -> None:
    client, rt = api
    admin = _auth(rt, "root", "admin")
    operator.create_token(rt.db, "tess", create=True)
    _problem(client.post("/api/admin/tokens", json={}, headers=admin), "username")
    for bad in ("30d", -1, 0, True, MAX_TTL + 1):
        _problem(client.post("/api/admin/tokens", json={"username": "tess", "expires_in": bad}, headers=admin),
                 "expires_in")
    _problem(client.post("/api/admin/tokens", json={"username": "tess", "name": "n" * 129}, headers=admin), "name")
    _problem(client.post("/api/admin/tokens", json={"username": "tess", "name": ["x"]}, headers=admin), "name")
    missing = client.post("/api/admin/tokens", json={"username": "ghost"}, headers=admin)
    assert missing.status_code == 404 and missing.json()["detail"] == "no user ghost"
    assert client.get("/api/admin/tokens?username=ghost", headers=admin).status_code == 404
    assert client.get("/api/admin/tokens", headers=admin).status_code == 422  # which account is required


def test_tokens_are_listed_without_secrets_and_revoked_at_once(api: tuple[TestClient, Any]) -> None:
    client, rt = api
    admin = _auth(rt, "root2", "admin")
    operator.create_token(rt.db, "uma", create=True)
    created = client.post("/api/admin/tokens", json={"username": "uma", "name": "ci", "expires_in": 3600},
                          headers=admin).json()
    secret = created["token"]
    assert secret.startswith("sfp_") and created["status"] == "active" and created["username"] == "uma"
    assert created["expires_at"] == pytest.approx(created["created_at"] + 3600, abs=5)
    assert client.get("/api/whoami", headers=_bearer(secret)).json()["username"] == "uma"  # now cached

    listed = client.get("/api/admin/tokens", params={"username": "uma"}, headers=admin).json()
    assert listed["username"] == "uma" and len(listed["tokens"]) == 2  # the operator's token and the new one
    row = next(t for t in listed["tokens"] if t["id"] == created["id"])
    assert set(row) == {"id", "username", "name", "status", "created_at", "expires_at", "revoked_at", "last_used_at"}
    assert secret not in str(listed) and "hash" not in str(listed)

    revoked = client.delete(f"/api/admin/tokens/{created['id']}", headers=admin)
    assert revoked.status_code == 200 and revoked.json()["status"] == "revoked", revoked.text
    refused = client.get("/api/whoami", headers=_bearer(secret))
    assert refused.status_code == 401 and "revoked" in refused.json()["detail"]
    again = client.delete(f"/api/admin/tokens/{created['id']}", headers=admin)
    assert again.status_code == 200 and again.json()["revoked_at"] == revoked.json()["revoked_at"]


def test_only_api_tokens_can_be_revoked_by_id(api: tuple[TestClient, Any]) -> None:
    client, rt = api
    admin = _auth(rt, "root3", "admin")
    for token_id in ("999999", "abc", "1e3", "9" * 40):
        answer = client.delete(f"/api/admin/tokens/{token_id}", headers=admin)
        assert answer.status_code == 404 and answer.json()["detail"].startswith("no API token"), answer.text
    session = client.post("/api/cli/device/code", json={}).json()  # a login makes access tokens, not API tokens
    assert client.post("/api/cli/device/approve", json={"user_code": session["user_code"]},
                       headers=admin).status_code == 200
    tokens = client.post("/api/cli/device/token", json={"device_code": session["device_code"]}).json()
    from starforge.console.services.accounts.credentials import hash_token
    from starforge.console.store.models import Token

    with rt.db.read() as db:
        access_id = db.query(Token.id).filter(Token.token_hash == hash_token(tokens["access_token"])).scalar()
    assert client.delete(f"/api/admin/tokens/{access_id}", headers=admin).status_code == 404
