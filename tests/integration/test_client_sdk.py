"""The `starforge.client` SDK against a real console: reads, check, submit, errors, device flow and refresh."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from starforge.client import (
    AuthError,
    Console,
    NotFound,
    Rejected,
    Unavailable,
    poll_device_login,
    start_device_login,
)
from tests.integration import helpers
from tests.integration.conftest import ConsoleProcess, unique


def toy_spec(console: ConsoleProcess, token: str, **extra: object) -> dict[str, object]:
    with console.client(token) as http:
        return helpers.spec_for(http, **extra)  # type: ignore[arg-type]


def test_account_and_cluster_reads(console: ConsoleProcess) -> None:
    user = unique("sdk")
    with Console(console.url, console.token_for(user)) as client:
        assert client.whoami().username == user
        assert client.version().api == "forge/v2"
        cluster = client.cluster_status()
        assert {p.name for p in cluster.profiles} >= {"cpu", "h200"}
        usage = client.usage()
        assert "max_concurrent_gpus" in usage.quota
        catalog = client.recipes()
        assert catalog["apiVersion"] == "forge/recipe-catalog/v2" and catalog["recipes"]
        assert client.jobs() == [] and client.jobs(all=True) == []
        assert client.admissions() == [] and client.extensions() == []  # a new account; nothing published here


def test_check_returns_verdicts(console: ConsoleProcess) -> None:
    token = console.token_for(unique("check"))
    with Console(console.url, token) as client:
        good = client.check(toy_spec(console, token), profile="cpu")
        assert good.ok, good.problems
        bad = client.check({"apiVersion": "forge/v1", "kind": "TrainingJob"})
        assert not bad.ok and bad.problems and bad.problems[0].field


def test_submit_is_idempotent_and_rejections_carry_problems(console: ConsoleProcess) -> None:
    token = console.token_for(unique("submit"))
    spec = toy_spec(console, token)
    key = str(uuid.uuid4())
    with Console(console.url, token) as client:
        first = client.submit(spec, helpers.bundle(), profile="cpu", idempotency_key=key)
        second = client.submit(spec, helpers.bundle(), profile="cpu", idempotency_key=key)
        assert first.job_id and second.job_id == first.job_id
        assert [j.ref for j in client.jobs()] == [first.job_id]
        assert client.job(first.job_id).ref == first.job_id
        assert client.jobspec(first.job_id)["spec"]["source"]["exp"] == "experiments/toy"

        broken = dict(spec, spec=dict(spec["spec"], resources={"pools": []}))  # type: ignore[arg-type]
        with pytest.raises(Rejected) as caught:
            client.submit(broken, helpers.bundle(), profile="cpu")
        assert caught.value.problems and caught.value.problems[0].field.startswith("spec.resources")
        assert caught.value.title
        client.cancel_all()


def test_unknown_jobs_are_not_found(console: ConsoleProcess) -> None:
    with Console(console.url, console.token_for(unique("ghost"))) as client:
        with pytest.raises(NotFound):
            client.stop("r-0000000000")
        with pytest.raises(NotFound):
            client.jobspec("r-0000000000")
        with pytest.raises(NotFound):
            list(client.logs("r-0000000000"))
        with pytest.raises(NotFound):
            client.resolve_job("r-")


def test_bad_token_is_an_auth_error(console: ConsoleProcess) -> None:
    with Console(console.url, "not-a-token") as client, pytest.raises(AuthError):
        client.whoami()


def test_device_flow_then_refresh_with_rotation(console: ConsoleProcess) -> None:
    approver = unique("approver")
    code = start_device_login(console.url)
    assert code.user_code and code.verification_uri.startswith(console.url)
    with Console(console.url, console.token_for(approver)) as approving:
        approving.approve_device_code(code.user_code)
    credentials = poll_device_login(console.url, code, sleep=lambda _seconds: None)  # approved already: no wait
    assert credentials.username == approver and credentials.refresh_token

    expired = dataclasses.replace(credentials, expires_at=0.0)
    with Console(console.url, credentials=expired) as client:
        assert client.whoami().username == approver
        rotated = client.credentials
    assert rotated is not None
    assert rotated.access_token != credentials.access_token
    assert rotated.refresh_token and rotated.refresh_token != credentials.refresh_token


def test_stopped_console_is_unavailable(console: ConsoleProcess) -> None:
    token = console.token_for(unique("down"))
    console.stop()
    try:
        with Console(console.url, token) as client, pytest.raises(Unavailable) as caught:
            client.whoami()
        assert "cannot reach the console" in str(caught.value)
    finally:
        console.start()
