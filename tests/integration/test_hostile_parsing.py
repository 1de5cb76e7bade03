"""Hostile input is refused with a 4xx that names its field, never a 500: deep JSON on every JSON endpoint and in
X-Forge-Meta and the multipart `spec` part, malformed multipart, out-of-range `limit`, long Idempotency-Key,
non-finite quota values, and plugin.yaml alias bombs.

In process: the console application on SQLite in a temporary state directory, driven by Starlette's test client.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from starforge.console.app import create_app
from starforge.console.services.accounts import credentials as accounts
from starforge.console.settings import load_settings
from tests.conftest import require_service
from tests.integration.helpers import admitted, bundle, spec_for, submit

DEEP = "[" * 2000 + "]" * 2000  # past the 1,000-frame budget of a recursive parser (950 already broke later steps)
ROLES = ("admin", "operator", "viewer")


@dataclass
class InProcessConsole:
    """The console application built on a fresh SQLite state directory, with one API token per role."""

    app: FastAPI
    tokens: dict[str, str]

    def client(self, role: str | None = "operator") -> TestClient:
        """Return a test client sending the bearer token of `role` (none when `role` is None); a 500 is a
        response, not an exception, so tests can assert on it."""
        headers = {"Authorization": f"Bearer {self.tokens[role]}"} if role else {}
        return TestClient(self.app, headers=headers, raise_server_exceptions=False)

    @property
    def state_dir(self) -> Path:
        """Return the state directory."""
        return Path(self.app.state.runtime.settings.state_dir)


def build_console(state_dir: Path, **settings: Any) -> InProcessConsole:
    """Return the console built in process on `state_dir` (no background loops), with users admin, alice, viewer."""
    app = create_app(load_settings(state_dir=state_dir, run_background=False,
                                  **{"unplaceable": "queue", **settings}))  # h200 jobs wait as pending
    tokens = {}
    with app.state.runtime.db.write() as db:
        for name, role in zip(("root", "alice", "victor"), ROLES, strict=True):
            tokens[role] = accounts.issue_api_token(db, accounts.create_user(db, name, role), "hostile tests")
    return InProcessConsole(app, tokens)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessConsole]:
    built = build_console(tmp_path_factory.mktemp("hostile-parsing") / "state")
    yield built
    built.app.state.runtime.db.dispose()


def _refused(response: Any, status: int, field: str, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert isinstance(body["detail"], str) and body["detail"], body
    problems = {(p["field"], p["code"]): p for p in body["problems"]}
    match = [p for (f, c), p in problems.items() if f == field and (code is None or c == code)]
    assert match, body
    assert match[0]["hint"], body
    return body


# Every endpoint that reads a JSON body: (method, path, role, extra headers).
JSON_ENDPOINTS = [
    ("POST", "/api/cli/device/code", None, {}),
    ("POST", "/api/cli/device/token", None, {}),
    ("POST", "/api/cli/device/approve", "operator", {}),
    ("POST", "/api/cli/device/deny", "operator", {}),
    ("POST", "/api/auth/refresh", None, {}),
    ("POST", "/api/auth/logout", None, {}),
    ("POST", "/api/admission/check", "operator", {}),
    ("POST", "/api/admin/users", "admin", {}),
    ("POST", "/api/admin/quotas", "admin", {}),
    ("POST", "/api/admin/data", "admin", {}),
    ("PATCH", "/api/plugins/alice/anything", "operator", {}),
    ("POST", "/api/ingest/metrics", None, {"X-StarForge-Token": "sfj_not-a-real-token"}),
]


@pytest.mark.parametrize(("method", "path", "role", "headers"), JSON_ENDPOINTS, ids=[e[1] for e in JSON_ENDPOINTS])
def test_deep_json_body_is_a_422_on_every_json_endpoint(console: InProcessConsole, method: str, path: str,
                                                        role: str | None, headers: dict[str, str]) -> None:
    with console.client(role) as client:
        response = client.request(method, path, content=DEEP, headers={"Content-Type": "application/json", **headers})
    _refused(response, 422, "<body>", "json_too_deep")


def test_deep_json_inside_the_base64_device_description_is_dropped(console: InProcessConsole) -> None:
    device = base64.urlsafe_b64encode(DEEP.encode()).decode().rstrip("=")
    with console.client(None) as client:
        response = client.post("/api/cli/device/code", json={"device": device})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("resume", ["²", "9" * 5000, "-1", "1e3"])
def test_log_stream_resume_id_that_is_not_an_offset_is_a_422(console: InProcessConsole, resume: str) -> None:
    with console.client() as client:
        job = submit(client, spec_for(client, series="h200", gpus=8)).json()["job_id"]
        response = client.get("/api/job/logs/stream", params={"id": job, "from": resume})
    _refused(response, 422, "from")


def test_deep_json_in_x_forge_meta_is_a_400(console: InProcessConsole) -> None:
    with console.client() as client:
        response = client.post("/api/jobs", content=bundle(),
                               headers={"Content-Type": "application/gzip", "X-Forge-Meta": DEEP})
    _refused(response, 400, "X-Forge-Meta", "json_too_deep")


def test_deep_json_in_the_multipart_spec_part_is_a_400(console: InProcessConsole) -> None:
    with console.client() as client:
        response = client.post("/api/jobs", data={"spec": DEEP, "exp": "experiments/toy"},
                               files={"bundle": ("bundle.tar.gz", bundle(), "application/gzip")})
    _refused(response, 400, "spec", "json_too_deep")


MALFORMED_MULTIPART = {
    "no boundary": ("multipart/form-data", b"--x\r\nContent-Disposition: form-data; name=\"spec\"\r\n\r\n{}\r\n--x--\r\n"),
    "part without a name": ("multipart/form-data; boundary=x",
                            b"--x\r\nContent-Disposition: form-data\r\n\r\n{}\r\n--x--\r\n"),
    "broken part headers": ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition form-data\r\n\r\n{}\r\n"),
    "truncated part": ("multipart/form-data; boundary=x",
                       b"--x\r\nContent-Disposition: form-data; name=\"spec\"\r\n\r\n{\"apiVer"),
    "garbage": ("multipart/form-data; boundary=x", b"\x00\xff" * 512),
    "a part sent twice": ("multipart/form-data; boundary=x",
                          b"--x\r\nContent-Disposition: form-data; name=\"spec\"\r\n\r\n{}\r\n"
                          b"--x\r\nContent-Disposition: form-data; name=\"spec\"\r\n\r\n{}\r\n--x--\r\n"),
}  # a part over its size limit is a 413 naming it: tests/integration/test_hostile_uploads.py


@pytest.mark.parametrize("case", sorted(MALFORMED_MULTIPART))
def test_malformed_multipart_is_a_400_with_a_detail(console: InProcessConsole, case: str) -> None:
    content_type, body = MALFORMED_MULTIPART[case]
    with console.client() as client:
        response = client.post("/api/jobs", content=body, headers={"Content-Type": content_type})
    assert response.status_code == 400, response.text
    assert response.json()["detail"] and response.json()["problems"][0]["hint"]


@pytest.mark.parametrize("path", ["/api/jobs/mine", "/api/admissions/mine"])
@pytest.mark.parametrize("limit", ["-1", "0", str(10**12), str(10**30), "1001"])
def test_limit_outside_its_documented_range_is_a_422(console: InProcessConsole, path: str, limit: str) -> None:
    if path == "/api/admissions/mine" and limit == "1001":
        limit = "501"
    with console.client() as client:
        response = client.get(path, params={"limit": limit})
    _refused(response, 422, "limit")


@pytest.mark.parametrize(("path", "limit"), [("/api/jobs/mine", 1000), ("/api/admissions/mine", 500)])
def test_limit_at_its_documented_maximum_is_served(console: InProcessConsole, path: str, limit: int) -> None:
    with console.client() as client:
        assert client.get(path, params={"limit": limit}).status_code == 200


def test_idempotency_key_longer_than_255_characters_is_a_400_naming_the_header(console: InProcessConsole) -> None:
    long_key = "k" * 255 + uuid.uuid4().hex
    with console.client() as client:
        spec = spec_for(client, series="h200", gpus=8)
        for _attempt in range(2):  # the second used to collide with the truncated first: a 500
            _refused(submit(client, spec, key=long_key), 400, "Idempotency-Key", "value_too_long")
        first = submit(client, spec, key=long_key[:255])
        other = submit(client, spec, key=long_key[:254] + "z")
    assert admitted(first, "pending") != admitted(other, "pending")  # two jobs (h200 has no capacity here)


@pytest.mark.parametrize("field", ["max_concurrent_gpus", "max_concurrent_jobs", "daily_gpu_hours", "max_storage_gb",
                                   "priority"])
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "-1e300", "1e300", str(10**30), "-5"])
def test_quota_value_that_is_not_finite_or_in_range_is_a_400_with_its_field(console: InProcessConsole, field: str,
                                                                           value: str) -> None:
    if field == "priority" and value == "-5":
        value = str(-(10**9))
    raw = f'{{"username": "alice", "{field}": {value}}}'  # by hand: JSON encoders refuse NaN and Infinity
    with console.client("admin") as client:
        response = client.post("/api/admin/quotas", content=raw, headers={"Content-Type": "application/json"})
        assert client.get("/api/admin/quotas/alice").status_code == 200
    _refused(response, 400, field)


def test_quota_within_range_is_stored(console: InProcessConsole) -> None:
    with console.client("admin") as client:
        response = client.post("/api/admin/quotas", json={"username": "alice", "daily_gpu_hours": 12.5,
                                                          "max_concurrent_gpus": 64, "priority": -3})
        assert response.status_code == 200, response.text
        client.post("/api/admin/quotas", json={"username": "alice", "daily_gpu_hours": 0, "max_concurrent_gpus": 16,
                                               "priority": 0})
    assert (response.json()["daily_gpu_hours"], response.json()["priority"]) == (12.5, -3)


BILLION_LAUGHS = "name: laughs\nversion: '1'\n" + "".join(
    f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}" if i else '"lol"'] * 9) + "]\n"
    for i in range(9)
) + "summary: *i\n"


def test_plugin_yaml_alias_bomb_is_refused_and_the_listing_stays_small(console: InProcessConsole) -> None:
    assert len(BILLION_LAUGHS.encode()) < 400
    with console.client() as client:
        response = client.post("/api/plugins/publish", content=bundle({"plugin.yaml": BILLION_LAUGHS}))
        listing = client.get("/api/plugins")
    body = _refused(response, 400, "plugin.yaml", "yaml_refused")
    assert "alias" in body["detail"]
    assert listing.status_code == 200 and len(listing.content) < 64 * 1024


@pytest.mark.parametrize(("manifest", "field"), [
    ("name: long\nversion: '1'\nsummary: " + "s" * 5000 + "\n", "plugin.yaml.summary"),
    ("name: nested\nversion: '1'\nsummary: {a: [1, 2, 3]}\n", "plugin.yaml.summary"),
    ("name: kind\nversion: '1'\nkind: " + "k" * 40 + "\n", "plugin.yaml.kind"),
    ("name: " + "n" * 200 + "\nversion: '1'\n", "plugin.yaml.name"),
    ("[" * 100 + "]" * 100 + "\n", "plugin.yaml"),
])
def test_plugin_manifest_values_are_bounded(console: InProcessConsole, manifest: str, field: str) -> None:
    with console.client() as client:
        response = client.post("/api/plugins/publish", content=bundle({"plugin.yaml": manifest}))
    _refused(response, 400, field)


def test_plugin_owner_must_be_a_safe_segment(console: InProcessConsole) -> None:
    package = bundle({"plugin.yaml": "name: escape\nversion: '1'\n"})
    with console.client("admin") as client:
        response = client.post("/api/plugins/publish", params={"owner": "../../outside"}, content=package)
    _refused(response, 400, "owner", "not_a_safe_segment")
    assert not (console.state_dir.parent / "outside").exists()


@pytest.mark.parametrize("body", [
    {"kind": "dataset", "ref": "alice/set@v1", "path": "/tmp", "grants": 5},
    {"kind": ["dataset"], "ref": "alice/set@v1", "path": "/tmp"},
    {"kind": "dataset", "ref": "alice/set@v1", "path": "/tmp\x00/x"},
    {"kind": "dataset", "ref": "alice/" + "n" * 200 + "@v1", "path": "/tmp"},
    [1, 2, 3],
])
def test_data_registration_with_wrong_types_is_a_4xx(console: InProcessConsole, body: Any) -> None:
    with console.client("admin") as client:
        response = client.post("/api/admin/data", content=json.dumps(body),
                               headers={"Content-Type": "application/json"})
    assert response.status_code in (400, 422), response.text
    assert response.json()["problems"] and all(p["hint"] for p in response.json()["problems"])


@pytest.fixture(scope="module")
def pg_console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessConsole]:
    import psycopg

    admin_url = require_service("PostgreSQL", "STARFORGE_TEST_POSTGRES_URL", "run `scripts/services.sh up`")
    name = "sf_hostile_" + uuid.uuid4().hex[:12]
    plain = admin_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    built = build_console(tmp_path_factory.mktemp("hostile-pg") / "state",
                          database_url=admin_url.rsplit("/", 1)[0] + "/" + name)
    yield built
    built.app.state.runtime.db.dispose()
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}"')


# PostgreSQL refuses a NUL inside any text it is given, even to compare: each of these was a 500 there.
NUL_REQUESTS = [
    ("operator", "GET", "/api/job?id=a%00b", None, "id"),
    ("operator", "GET", "/api/jobs/a%00b/jobspec", None, "ref"),
    ("operator", "POST", "/api/job/stop?id=%00", None, "id"),
    ("operator", "GET", "/api/job/logs/stream?id=%00", None, "id"),
    ("operator", "GET", "/api/plugins/a%00/b", None, "owner"),
    ("operator", "GET", "/api/plugins/a/b?version=%00", None, "version"),
    ("operator", "GET", "/api/data/%00", None, "kind"),
    ("operator", "PATCH", "/api/plugins/alice/x", {"enabled": False, "version": "\x00"}, "version"),
    ("operator", "POST", "/api/cli/device/approve", {"user_code": "a\x00b"}, "user_code"),
    ("admin", "GET", "/api/admin/quotas/a%00", None, "username"),
    ("admin", "PATCH", "/api/admin/users/a%00/role?role=viewer", None, "username"),
    ("admin", "POST", "/api/admin/quotas", {"username": "alice\x00"}, "username"),
]


@pytest.mark.postgres
@pytest.mark.parametrize(("role", "method", "path", "body", "field"), NUL_REQUESTS,
                         ids=[f"{r[1]} {r[2]}" for r in NUL_REQUESTS])
def test_nul_character_in_a_parameter_or_field_is_a_422_on_postgres(
    pg_console: InProcessConsole, role: str, method: str, path: str, body: Any, field: str
) -> None:
    with pg_console.client(role) as client:
        response = client.request(method, path, json=body) if body is not None else client.request(method, path)
    _refused(response, 422, field)


def test_nul_character_in_the_idempotency_key_is_a_400(console: InProcessConsole) -> None:
    with console.client() as client:
        response = submit(client, spec_for(client, series="h200", gpus=8), key="key\x00")
    _refused(response, 400, "Idempotency-Key", "invalid_request")
