"""The fast path keeps every rule: a token or quota answered from memory is forgotten the moment it changes — through
the API, or through an operator's command in another process on the same state folder — and request headers stay
bounded with the fast HTTP parser."""

from __future__ import annotations

import socket
from urllib.parse import urlparse

import httpx
import pytest

from starforge.console.services.accounts import credentials as accounts
from tests.integration.conftest import BACKENDS, ConsoleProcess, unique
from tests.integration.helpers import spec_for


def _whoami(console: ConsoleProcess, token: str) -> int:
    with console.client(token) as api:
        return api.get("/api/whoami").status_code


def test_a_session_logged_out_is_refused_on_its_next_request(console: ConsoleProcess) -> None:
    grant = httpx.post(f"{console.url}/api/cli/device/code", json={}).json()
    with console.client(console.token_for(unique())) as api:
        api.post("/api/cli/device/approve", json={"user_code": grant["user_code"]})
    session = httpx.post(f"{console.url}/api/cli/device/token", json={"device_code": grant["device_code"]}).json()
    assert _whoami(console, session["access_token"]) == 200  # now remembered by the console
    assert httpx.post(f"{console.url}/api/auth/logout", json={"refresh_token": session["refresh_token"]}).json()["ok"]
    assert _whoami(console, session["access_token"]) == 401


def test_an_account_disabled_from_another_process_is_refused_at_once(console: ConsoleProcess) -> None:
    name = unique()
    token = console.token_for(name)
    assert _whoami(console, token) == 200
    with console.database().write() as session:  # this test process, not the console's
        accounts.set_disabled(session, name, True, by="an operator")
    assert _whoami(console, token) == 401


@pytest.mark.parametrize("console", BACKENDS, indirect=True)
def test_a_quota_set_by_the_operator_command_applies_to_the_next_admission(console: ConsoleProcess) -> None:
    name = unique()
    with console.client(console.token_for(name)) as api:
        spec = spec_for(api, series="h200", gpus=8)
        assert api.post("/api/admission/check", json={"spec": spec, "profile": "h200"}).json()["ok"]
        console.sf("quota", "set", name, "--gpus", "4", check=True)  # `sf console quota set`: its own process
        verdict = api.post("/api/admission/check", json={"spec": spec, "profile": "h200"}).json()
    assert not verdict["ok"]
    assert [p["code"] for p in verdict["problems"]] == ["quota_exceeded"]


def _raw_request(console: ConsoleProcess, header_bytes: int) -> bytes:
    url = urlparse(console.url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as conn:
        conn.sendall(b"GET /api/whoami HTTP/1.1\r\nHost: console\r\nX-Padding: ")
        sent = 0
        try:
            while sent < header_bytes:
                conn.sendall(b"a" * 65536)
                sent += 65536
            conn.sendall(b"\r\n\r\n")
        except OSError:  # the console closed the connection after answering
            pass
        return conn.recv(200)


def test_request_headers_are_bounded(console: ConsoleProcess) -> None:
    assert _raw_request(console, 3 * 1024 * 1024).startswith(b"HTTP/1.1 431 ")
    assert _raw_request(console, 200 * 1024).startswith(b"HTTP/1.1 401 ")  # large X-Forge-Meta headers still pass
