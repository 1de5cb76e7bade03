"""Webhooks end to end: a real console process sends its jobs' state changes, signed, to a receiver on loopback
(allowed explicitly with `notify.allow_hosts`), retries a receiver that answers 500, never sends one account's
events to another's hooks, and refuses URLs that point at loopback (without the setting), the metadata address or
the console itself; hooks are added, listed and removed with the real `sf notify`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from starforge.client import verify_webhook
from tests.integration.conftest import DEFAULT_CONFIG, ConsoleProcess, make_console, unique
from tests.integration.helpers import bundle, spec_for, submit, wait_for_end
from tests.integration.test_cli_account import sf, token_login
from tests.webhook_receiver import Receiver

PROFILES = [{"name": "cpu", "series": "cpu", "num_nodes": 1, "gpus_per_node": 1, "label": "CPU slot"}]
NOTIFY = {"allow_hosts": ["127.0.0.1"], "retry_seconds": [0.2, 0.2, 0.2], "poll_seconds": 0.1}


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    got = Receiver()
    yield got
    got.close()


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    proc = make_console(tmp_path_factory, "sqlite", config={**DEFAULT_CONFIG, "profiles": PROFILES,
                                                            "stop_grace_seconds": 1, "notify": NOTIFY})
    proc.start()
    yield proc
    proc.stop()


def _job(api: httpx.Client, name: str, script: str) -> str:
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}", series="cpu", gpus=1)
    spec["spec"]["framework"]["image"] = "nvcr.io/team/trainer:1.0"
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
    response = submit(api, spec, data=bundle({f"experiments/{name}/train.sh": script}), profile="cpu")
    assert response.status_code in (200, 202), response.text
    return str(response.json()["job_id"])


def _added(home: Path, url: str, *extra: str) -> dict[str, Any]:
    done = sf("notify", "add", url, *extra, "--json", home=home)
    assert done.returncode == 0, done.stderr
    hook: dict[str, Any] = json.loads(done.stdout)
    return hook


def _wait_delivered(api: httpx.Client, hook: int, count: int, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        rows = api.get("/api/notify/deliveries", params={"hook": hook}).json()["deliveries"]
        if sum(r["state"] in ("delivered", "failed") for r in rows) >= count or time.monotonic() > deadline:
            return list(rows)
        time.sleep(0.1)


def test_jobs_that_succeed_and_fail_deliver_signed_events_and_sf_notify_adds_lists_and_removes(
    console: ConsoleProcess, receiver: Receiver, tmp_path: Path,
) -> None:
    home = tmp_path / "alice"
    user = unique("nt")
    token_login(console, home, user)
    hook = _added(home, f"{receiver.url}/alice", "--events", "succeeded,failed,running")
    secret = hook["secret"]
    assert secret.startswith("whsec_") and hook["events"] == ["running", "succeeded", "failed"]
    listed = json.loads(sf("notify", "ls", "--json", home=home).stdout)["hooks"]
    assert [h["id"] for h in listed] == [hook["id"]]
    assert secret not in json.dumps(listed) and listed[0]["secret_prefix"] == secret[:12]  # shown once only
    api = console.client(console.token_for(user))
    try:
        good = _job(api, "good", "echo fine\n")
        bad = _job(api, "bad", "echo failing\nexit 3\n")
        assert wait_for_end(api, good)["status"] == "succeeded"
        assert wait_for_end(api, bad)["status"] == "failed"
        got = receiver.wait_for("/alice", 4)  # running and the end, of each job
        events: dict[tuple[str, str], dict[str, Any]] = {}
        for headers, body in got:
            assert verify_webhook(secret, headers["X-StarForge-Signature"], body), headers
            assert not verify_webhook(secret, headers["X-StarForge-Signature"], body + b" ")
            event = json.loads(body)
            assert headers["X-StarForge-Event"] == event["type"] and headers["X-StarForge-Delivery"]
            events[(event["data"]["job_ref"], event["type"])] = event
        assert set(events) == {(good, "job.running"), (good, "job.succeeded"), (bad, "job.running"),
                               (bad, "job.failed")}
        ended = events[(good, "job.succeeded")]
        assert ended["id"].startswith("evt_") and ended["data"]["previous"] == "running"
        assert ended["data"]["status"] == "succeeded" and ended["data"]["exp"] == "experiments/good"
        assert ended["data"]["recipe"] == "custom/custom" and ended["data"]["owner"] == user
        log = json.loads(sf("notify", "log", str(hook["id"]), "--json", home=home).stdout)["deliveries"]
        assert {d["state"] for d in log} == {"delivered"} and all(d["tries"][0]["status_code"] == 204 for d in log)
        human = sf("notify", "log", home=home)
        assert human.returncode == 0 and "delivered" in human.stdout
        removed = sf("notify", "rm", str(hook["id"]), "--json", home=home)
        assert removed.returncode == 0 and json.loads(removed.stdout)["removed"] is True
        assert json.loads(sf("notify", "ls", "--json", home=home).stdout)["hooks"] == []
        _job_ended = _job(api, "after", "echo fine\n")
        assert wait_for_end(api, _job_ended)["status"] == "succeeded"
        assert api.get("/api/notify/deliveries").json()["deliveries"] == []  # the removed hook took its log along
    finally:
        api.close()


def test_a_receiver_answering_500_gets_retries_until_it_accepts(console: ConsoleProcess, receiver: Receiver) -> None:
    user = unique("nr")
    api = console.client(console.token_for(user))
    try:
        receiver.failing["/flaky"] = 2
        hook = api.post("/api/notify/hooks", json={"url": f"{receiver.url}/flaky", "events": ["succeeded"]}).json()
        job = _job(api, "flaky", "echo fine\n")
        assert wait_for_end(api, job)["status"] == "succeeded"
        got = receiver.wait_for("/flaky", 3)
        assert len({h["X-StarForge-Delivery"] for h, _ in got}) == 1  # one delivery, tried three times
        assert len({b for _, b in got}) == 1  # the same body (and event id) on every try
        [delivery] = _wait_delivered(api, hook["id"], 1)
        assert delivery["state"] == "delivered" and delivery["attempts"] == 3
        assert [t["status_code"] for t in delivery["tries"]] == [500, 500, 204]
        assert delivery["tries"][0]["next_at"] is not None and delivery["tries"][-1]["next_at"] is None
        assert "500" in delivery["tries"][0]["error"]
    finally:
        api.close()


def test_a_receiver_that_keeps_failing_is_given_up_after_the_last_retry(console: ConsoleProcess,
                                                                         receiver: Receiver) -> None:
    api = console.client(console.token_for(unique("ng")))
    try:
        receiver.failing["/down"] = 100
        hook = api.post("/api/notify/hooks", json={"url": f"{receiver.url}/down", "events": ["succeeded"]}).json()
        job = _job(api, "down", "echo fine\n")
        assert wait_for_end(api, job)["status"] == "succeeded"
        [delivery] = _wait_delivered(api, hook["id"], 1)
        assert delivery["state"] == "failed" and delivery["attempts"] == len(NOTIFY["retry_seconds"]) + 1
        assert delivery["next_at"] is None and len(receiver.at("/down")) == delivery["attempts"]
        assert api.get("/api/notify/hooks").json()["hooks"][0]["deliveries"]["failed"] == 1
    finally:
        api.close()


def test_another_accounts_hooks_are_invisible_and_its_events_never_reach_them(console: ConsoleProcess,
                                                                              receiver: Receiver) -> None:
    mine = console.client(console.token_for(unique("na")))
    theirs = console.client(console.token_for(unique("nb")))
    try:
        hook = mine.post("/api/notify/hooks", json={"url": f"{receiver.url}/mine"}).json()
        theirs_hook = theirs.post("/api/notify/hooks", json={"url": f"{receiver.url}/theirs"}).json()
        assert [h["id"] for h in theirs.get("/api/notify/hooks").json()["hooks"]] == [theirs_hook["id"]]
        for answer in (theirs.delete(f"/api/notify/hooks/{hook['id']}"),
                       theirs.get("/api/notify/deliveries", params={"hook": hook["id"]}),
                       theirs.delete("/api/notify/hooks/999999")):
            assert answer.status_code == 404 and "sf notify ls" in answer.json()["detail"], answer.text
        their_job = _job(theirs, "theirs", "echo fine\n")
        my_job = _job(mine, "mine", "echo fine\n")
        assert wait_for_end(theirs, their_job)["status"] == wait_for_end(mine, my_job)["status"] == "succeeded"
        [(_, body)] = receiver.wait_for("/mine", 1)
        assert json.loads(body)["data"]["job_ref"] == my_job
        [(_, their_body)] = receiver.wait_for("/theirs", 1)
        assert json.loads(their_body)["data"]["job_ref"] == their_job
        assert all(d["job_ref"] == my_job for d in mine.get("/api/notify/deliveries").json()["deliveries"])
        assert mine.get(f"/api/notify/hooks/{hook['id']}").status_code in (404, 405)
    finally:
        mine.close()
        theirs.close()


@pytest.mark.parametrize(("url", "code"), [
    ("http://127.0.0.1:{console_port}/hook", "console_address"),
    ("http://169.254.169.254/latest/meta-data/", "metadata_address"),
    ("http://[fd00:ec2::254]/", "metadata_address"),
    ("http://10.1.2.3/hook", "private_address"),
    ("http://192.168.1.1/hook", "private_address"),
    ("http://[::1]:9/hook", "private_address"),
    ("ftp://hooks.example.com/x", "invalid_url"),
    ("https://user:pw@hooks.example.com/x", "credentials_in_url"),
    ("http://no-such-host.invalid/x", "unresolvable_host"),
])
def test_refused_urls_are_clear_errors_at_url(console: ConsoleProcess, url: str, code: str) -> None:
    with console.client(console.token_for(unique("nu"))) as api:
        answer = api.post("/api/notify/hooks", json={"url": url.format(console_port=console.port)})
        assert answer.status_code == 400, answer.text
        [problem] = answer.json()["problems"]
        assert problem["field"] == "url" and problem["code"] == code and problem["hint"], problem
        assert api.get("/api/notify/hooks").json()["hooks"] == []


def test_unknown_events_and_viewers_are_refused(console: ConsoleProcess, receiver: Receiver, tmp_path: Path) -> None:
    with console.client(console.token_for(unique("ne"))) as api:
        answer = api.post("/api/notify/hooks", json={"url": receiver.url, "events": ["finished"]})
        assert answer.status_code == 400 and answer.json()["problems"][0]["field"] == "events", answer.text
    with console.client(console.token_for(unique("nv"), "viewer")) as viewer:
        assert viewer.post("/api/notify/hooks", json={"url": receiver.url}).status_code == 403
    home = tmp_path / "cli"
    token_login(console, home, unique("nc"))
    done = sf("notify", "add", "http://169.254.169.254/", home=home)
    assert done.returncode == 1 and "url" in done.stderr and "metadata" in done.stderr, done.stderr


def test_loopback_is_refused_without_the_operators_setting(tmp_path_factory: pytest.TempPathFactory,
                                                           receiver: Receiver) -> None:
    closed = make_console(tmp_path_factory, "sqlite", config={"capacity": {"cpu": 1}})
    closed.start()
    try:
        with closed.client(closed.token_for(unique("nl"))) as api:
            answer = api.post("/api/notify/hooks", json={"url": f"{receiver.url}/x"})
            assert answer.status_code == 400, answer.text
            [problem] = answer.json()["problems"]
            assert (problem["field"], problem["code"]) == ("url", "private_address")
            assert "notify.allow_hosts" in problem["hint"]
    finally:
        closed.stop()


def test_on_postgresql_a_job_delivers_its_signed_event_once(tmp_path_factory: pytest.TempPathFactory,
                                                            receiver: Receiver) -> None:
    pg = make_console(tmp_path_factory, "postgres", config={**DEFAULT_CONFIG, "profiles": PROFILES,
                                                            "notify": NOTIFY})
    pg.start()
    try:
        with pg.client(pg.token_for(unique("np"))) as api:
            receiver.failing["/pg"] = 1
            hook = api.post("/api/notify/hooks", json={"url": f"{receiver.url}/pg", "events": ["succeeded"]}).json()
            job = _job(api, "pg", "echo fine\n")
            assert wait_for_end(api, job)["status"] == "succeeded"
            [delivery] = _wait_delivered(api, hook["id"], 1)
            assert delivery["state"] == "delivered" and delivery["attempts"] == 2
            got = receiver.wait_for("/pg", 2)
            assert all(verify_webhook(hook["secret"], h["X-StarForge-Signature"], b) for h, b in got)
            assert {json.loads(b)["data"]["job_ref"] for _, b in got} == {job}
    finally:
        pg.stop()
