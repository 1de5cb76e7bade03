"""Webhooks without a console process: event names, the URL rules (with a resolver standing in for DNS), the
signature, the `notify:` settings, the outbox written by the status door on a real SQLite store, and the sender's
attempts against a receiver on loopback (retried, then delivered; refused again at send time)."""

from __future__ import annotations

import dataclasses
import json
import stat
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from starforge.client import verify_webhook
from starforge.console.app import build_console
from starforge.console.notify_config import read_notify
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.context import Runtime
from starforge.console.services.jobs.rows import build_job, create_job, set_status
from starforge.console.services.notify import deliveries, hooks
from starforge.console.services.notify.addresses import check_url
from starforge.console.services.notify.events import event_type, read_events
from starforge.console.services.notify.keys import KEY_FILE, secret_of
from starforge.console.services.notify.retention import prune_deliveries
from starforge.console.services.notify.sender import send_due
from starforge.console.settings import Settings, load_settings
from starforge.console.store.models import WebhookAttempt, WebhookDelivery
from starforge.contract import parse_or_raise
from starforge.wire.webhook_signature import sign, verify
from tests.specs import minimal_spec
from tests.webhook_receiver import Receiver


def _settings(tmp_path: Path, **notify: Any) -> Settings:
    return load_settings(state_dir=tmp_path, run_background=False, capacity={"cpu": 2}, port=8080,
                         notify=read_notify(notify or None))


def _resolver(table: dict[str, Sequence[str]]) -> Any:
    def resolve(host: str, port: int) -> Sequence[str]:
        if host not in table:
            raise OSError("no such host")
        return table[host]
    return resolve


def test_event_types_name_what_a_user_cares_about() -> None:
    assert event_type("running", "succeeded", "") == "succeeded"
    assert event_type("running", "queued", "preempted by bob; it resumes …") == "preempted"
    assert event_type("running", "queued", "attempt 1 failed: …; it starts again") == "queued"
    assert event_type("running", "running", "asked to checkpoint") is None  # a new reason is no event
    assert event_type("queued", "submitted", "") is None  # an inner step
    assert read_events(None) == (("succeeded", "failed", "preempted"), [])
    assert read_events("failed, succeeded")[0] == ("succeeded", "failed")
    for bad in ("finished", [], "", [3]):
        assert read_events(bad)[1][0].field == "events"


@pytest.mark.parametrize(("url", "table", "code"), [
    ("https://hooks.example.com/x", {"hooks.example.com": ["8.8.8.8", "10.0.0.1"]}, "private_address"),  # any one
    ("https://rebind.example.com/", {"rebind.example.com": ["::ffff:127.0.0.1"]}, "private_address"),
    ("http://meta.example.com/", {"meta.example.com": ["169.254.169.254"]}, "metadata_address"),
    ("http://8.8.4.4:8080/", {"8.8.4.4": ["8.8.4.4"]}, "console_address"),  # the public_url's address and port
    ("http://[fe80::1]/", {"fe80::1": ["fe80::1"]}, "private_address"),
    ("http://0.0.0.0:8080/", {"0.0.0.0": ["0.0.0.0"]}, "console_address"),
    ("javascript:alert(1)", {}, "invalid_url"),
    ("http://gone.example.com/", {}, "unresolvable_host"),
])
def test_urls_are_refused_at_url_with_a_hint(tmp_path: Path, url: str, table: dict[str, Sequence[str]],
                                             code: str) -> None:
    settings = dataclasses.replace(_settings(tmp_path), public_url="http://8.8.4.4:8080")
    target, problems = check_url(url, settings, _resolver({**table, "127.0.0.1": ["127.0.0.1"]}))
    assert target is None and [(p.field, p.code) for p in problems] == [("url", code)] and problems[0].hint


def test_allow_hosts_opens_what_it_names_but_never_the_metadata_address_or_the_console(tmp_path: Path) -> None:
    settings = _settings(tmp_path, allow_hosts=["127.0.0.1", "169.254.0.0/16"])
    resolve = _resolver({"127.0.0.1": ["127.0.0.1"], "169.254.169.254": ["169.254.169.254"]})
    target, problems = check_url("http://127.0.0.1:9000/hook?x=1", settings, resolve)
    assert not problems and target is not None and (target.addresses, target.path) == (("127.0.0.1",), "/hook?x=1")
    assert check_url("http://127.0.0.1:8080/", settings, resolve)[1][0].code == "console_address"
    assert check_url("http://169.254.169.254/", settings, resolve)[1][0].code == "metadata_address"


def test_the_signature_binds_the_body_and_its_time() -> None:
    header = sign("whsec_k", b'{"a":1}', 1_000_000)
    assert verify("whsec_k", header, b'{"a":1}', now=1_000_100)
    assert not verify("whsec_k", header, b'{"a":2}', now=1_000_100)
    assert not verify("whsec_other", header, b'{"a":1}', now=1_000_100)
    assert not verify("whsec_k", header, b'{"a":1}', now=1_000_000 + 301)  # a replay
    assert not verify("whsec_k", "garbage", b"", now=0)


def test_notify_settings_refuse_wrong_values_naming_the_key() -> None:
    for raw, key in (({"allow_hosts": ["not an address"]}, "allow_hosts"), ({"retry_seconds": "10"}, "retry_seconds"),
                     ({"timeout_seconds": 0}, "timeout_seconds"), ({"max_hooks": 0}, "max_hooks"),
                     ({"keep_deliveries": 0}, "keep_deliveries"),
                     ({"colour": 1}, "unknown")):
        with pytest.raises(ValueError, match=key):
            read_notify(raw)
    assert read_notify({"retry_seconds": [1, 2]}).max_attempts == 3


def test_secrets_derive_from_the_state_folders_key_and_each_hooks_salt(tmp_path: Path) -> None:
    first = secret_of(tmp_path, "salt-a")
    assert first == secret_of(tmp_path, "salt-a") != secret_of(tmp_path, "salt-b")
    assert first.startswith("whsec_") and stat.S_IMODE((tmp_path / KEY_FILE).stat().st_mode) == 0o600
    (tmp_path / "elsewhere").mkdir()
    assert secret_of(tmp_path / "elsewhere", "salt-a") != first  # another console's key: another secret


@pytest.fixture()
def rt(tmp_path: Path) -> Iterator[Runtime]:
    settings = _settings(tmp_path, allow_hosts=["127.0.0.1"], retry_seconds=[0, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
        runtime = build_console(settings).runtime
    yield runtime
    runtime.db.dispose()


def _user(rt: Runtime, name: str) -> accounts.UserView:
    with rt.db.write() as db:
        return accounts.create_user(db, name)


def _job_through(rt: Runtime, user: accounts.UserView, statuses: Sequence[str], *, fail: bool = False) -> str:
    with rt.db.write() as db:
        job = create_job(db, build_job(user_id=user.id, username=user.username, spec=parse_or_raise(minimal_spec()),
                                       exp="experiments/toy", profile="cpu", priority=3, meta={}, resolved={},
                                       package_sha="sha"))
        for status in statuses:
            set_status(db, job, status)
        if fail:
            raise RuntimeError("the change rolls back")
        return job.id


def test_the_status_door_writes_deliveries_for_the_jobs_own_account_only(rt: Runtime) -> None:
    alice, bob = _user(rt, "alice"), _user(rt, "bob")
    mine = hooks.add_hook(rt, user=alice, body={"url": "http://127.0.0.1:9/a", "events": ["running", "succeeded"]})
    hooks.add_hook(rt, user=bob, body={"url": "http://127.0.0.1:9/b"})
    job = _job_through(rt, alice, ("queued", "submitted", "running", "succeeded"))
    with pytest.raises(RuntimeError):
        _job_through(rt, alice, ("queued", "submitted", "running"), fail=True)
    with rt.db.read() as db:
        rows = list(db.scalars(select(WebhookDelivery).order_by(WebhookDelivery.id)))
    assert [(r.hook_id, r.job_id, r.event) for r in rows] == [(mine["id"], job, "running"),
                                                              (mine["id"], job, "succeeded")]
    body = json.loads(rows[1].body)
    assert body["type"] == "job.succeeded" and body["data"]["job_ref"] == job and body["data"]["owner"] == "alice"
    assert deliveries.delivery_log(rt, user=bob)["deliveries"] == []


def test_the_sender_retries_signs_and_records_each_attempt(rt: Runtime) -> None:
    receiver = Receiver()
    receiver.failing["/hook"] = 1
    alice = _user(rt, "alice")
    hook = hooks.add_hook(rt, user=alice, body={"url": f"{receiver.url}/hook", "events": ["succeeded"]})
    _job_through(rt, alice, ("submitted", "running", "succeeded"))
    with ThreadPoolExecutor(2) as pool:
        assert send_due(rt, pool) == 1  # answered 500: due again at once (retry_seconds: [0, 0])
        assert send_due(rt, pool) == 1  # delivered
        assert send_due(rt, pool) == 0
    [(headers, body)] = {h["X-StarForge-Delivery"]: (h, b) for h, b in receiver.at("/hook")}.values()
    assert verify_webhook(hook["secret"], headers["X-StarForge-Signature"], body)
    [delivery] = deliveries.delivery_log(rt, user=alice)["deliveries"]
    assert delivery["state"] == "delivered" and [t["status_code"] for t in delivery["tries"]] == [500, 204]
    receiver.close()


def test_the_sender_checks_the_url_again_before_each_attempt(rt: Runtime) -> None:
    alice = _user(rt, "alice")
    hooks.add_hook(rt, user=alice, body={"url": "http://127.0.0.1:9/x", "events": ["succeeded"]})
    _job_through(rt, alice, ("submitted", "running", "succeeded"))
    closed = dataclasses.replace(rt, settings=dataclasses.replace(rt.settings, notify=read_notify({"retry_seconds": []})))
    with ThreadPoolExecutor(1) as pool:
        assert send_due(closed, pool) == 1
    [delivery] = deliveries.delivery_log(rt, user=alice)["deliveries"]
    assert delivery["state"] == "failed" and delivery["tries"][0]["status_code"] is None
    assert delivery["last_error"].startswith("refused: 127.0.0.1 is not a public address")


def test_the_delivery_log_keeps_each_hooks_newest_finished_deliveries_and_every_pending_one(rt: Runtime) -> None:
    kept = dataclasses.replace(rt, settings=dataclasses.replace(rt.settings, notify=read_notify({"keep_deliveries": 3})))
    alice = _user(rt, "alice")
    busy = hooks.add_hook(rt, user=alice, body={"url": "http://127.0.0.1:9/busy", "events": ["succeeded"]})
    quiet = hooks.add_hook(rt, user=alice, body={"url": "http://127.0.0.1:9/quiet", "events": ["running"]})
    for _ in range(6):
        _job_through(rt, alice, ("submitted", "running", "succeeded"))  # one delivery on each hook per job
    with rt.db.write() as db:
        rows = list(db.scalars(select(WebhookDelivery).order_by(WebhookDelivery.id)))
        for row in rows[:-1]:  # every delivery but the newest is finished, each with an attempt
            row.state = "delivered" if row.id % 2 else "failed"
            db.add(WebhookAttempt(delivery_id=row.id, number=1, at=1.0, status_code=204, error="", next_at=None))
    # six deliveries per hook, the newest of all (busy's last) still pending: 5 - 3 of busy's, 6 - 3 of quiet's go
    assert prune_deliveries(kept) == 5
    with rt.db.read() as db:
        left = list(db.scalars(select(WebhookDelivery).order_by(WebhookDelivery.id)))
        attempts = set(db.scalars(select(WebhookAttempt.delivery_id)))
    for hook in (busy, quiet):
        mine = [r for r in left if r.hook_id == hook["id"]]
        finished = [r.id for r in mine if r.state != "pending"]
        assert finished == sorted(r.id for r in rows if r.hook_id == hook["id"] and r.id != rows[-1].id)[-3:]
    assert rows[-1].id in {r.id for r in left}  # the outbox is never trimmed
    assert attempts == {r.id for r in left if r.state != "pending"}  # the removed deliveries' attempts went too
    assert prune_deliveries(kept) == 0
