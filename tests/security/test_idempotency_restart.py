"""`Idempotency-Key` on `POST /api/jobs`: a replay returns the first response and never a second job, across a
clean restart and a SIGKILL, under concurrency, per account, and for keys of any length the header can carry."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.integration.conftest import BACKENDS, ConsoleProcess, unique
from tests.integration.helpers import spec_for
from tests.security.consoles import Launcher, account, server_errors
from tests.security.wire import renamed, submission


def _post(api: httpx.Client, spec: dict[str, Any], key: str) -> httpx.Response:
    headers, body = submission(spec, key=key)
    return api.post("/api/jobs", content=body, headers=headers)


def _jobs(api: httpx.Client) -> list[dict[str, Any]]:
    return list(api.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_replay_after_clean_and_killed_restarts_returns_the_first_answer(launch: Launcher, backend: str) -> None:
    console = launch(backend, {"capacity": {"cpu": 2}})
    token = account(console, "idem")[1]
    key = unique("key")
    with console.client(token) as api:
        spec = spec_for(api, series="h200", gpus=8)
        first = _post(api, spec, key)
        assert first.status_code == 202, first.text
        again = _post(api, spec, key)
        assert (again.status_code, again.json()) == (first.status_code, first.json())
    for kill in (False, True):
        console.stop(kill=kill)
        console.start()
        with console.client(token) as api:
            replay = _post(api, spec, key)
            assert (replay.status_code, replay.json()) == (first.status_code, first.json()), f"after kill={kill}"
            assert [r["job_ref"] for r in _jobs(api)] == [first.json()["job_id"]]
    assert not server_errors(console)


@pytest.fixture(scope="module", params=BACKENDS)
def idem_console(request: pytest.FixtureRequest, launch_module: Launcher) -> Iterator[ConsoleProcess]:
    yield launch_module(request.param, {"capacity": {"cpu": 2}})


def test_concurrent_requests_with_one_key_make_one_job(idem_console: ConsoleProcess) -> None:
    token = account(idem_console, "same")[1]
    key, errors_before = unique("key"), len(server_errors(idem_console))
    with idem_console.client(token) as api:
        spec = spec_for(api, series="h200", gpus=8)

    def one(_: int) -> httpx.Response:
        with idem_console.client(token) as client:
            return _post(client, spec, key)

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(one, range(40)))
    assert {a.status_code for a in answers} == {202}, [a.text[:200] for a in answers if a.status_code != 202]
    assert len({a.json()["job_id"] for a in answers}) == 1
    with idem_console.client(token) as api:
        assert len(_jobs(api)) == 1
    assert server_errors(idem_console)[errors_before:] == []


def test_a_key_is_private_to_its_account(idem_console: ConsoleProcess) -> None:
    key = unique("shared")
    owners = dict(account(idem_console, prefix) for prefix in ("first", "second"))
    answers = {}
    for name, token in owners.items():
        with idem_console.client(token) as api:
            answers[name] = _post(api, spec_for(api, series="h200", gpus=8), key)
            assert answers[name].status_code == 202, answers[name].text
            assert [r["job_ref"] for r in _jobs(api)] == [answers[name].json()["job_id"]]
    first, second = (a.json()["job_id"] for a in answers.values())
    assert first != second, "the second account was answered with the first account's job"


@pytest.mark.parametrize("length", [255, 256, 2000])
def test_a_long_key_is_replayed_or_refused_never_a_5xx(idem_console: ConsoleProcess, length: int) -> None:
    token = account(idem_console, "long")[1]
    key = "k" * length
    with idem_console.client(token) as api:
        spec = renamed(spec_for(api, series="h200", gpus=8), f"long{length}")
        first = _post(api, spec, key)
        assert first.status_code < 500, first.text
        if first.status_code >= 400:
            assert isinstance(first.json().get("detail"), str) and first.json()["detail"]
            assert not _jobs(api)
            return
        replay = _post(api, spec, key)
        assert replay.status_code < 500, f"replaying a {length}-character key: {replay.status_code} {replay.text}"
        assert replay.json()["job_id"] == first.json()["job_id"]
        assert len(_jobs(api)) == 1
