"""Fair share in the store (`shares`), on a real SQLite console: usage charged at an attempt's end and decayed, the
weights an administrator sets (and the weights refused, with the field), the book the scheduler reads (running
attempts counted on the fly) and the report the surfaces show."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from starforge.console.app import build_console
from starforge.console.services.accounts import credentials as accounts
from starforge.console.services.context import Runtime
from starforge.console.services.errors import Rejected
from starforge.console.services.quota import shares
from starforge.console.settings import load_settings
from starforge.console.store.models import Job, ShareUsage
from starforge.contract import CODES

NOW = 1_800_000_000.0
HALF_LIFE = 3600.0


@pytest.fixture
def rt(tmp_path: Any) -> Iterator[Runtime]:
    settings = load_settings(state_dir=tmp_path / "state", run_background=False, capacity={"h200": 16, "b200": 8})
    settings = replace(settings, fair_share=replace(settings.fair_share, half_life_hours=1.0))
    runtime = build_console(settings).runtime
    with runtime.db.write() as db:
        for name in ("alice", "bob", "carol"):
            accounts.create_user(db, name)
    yield runtime
    runtime.db.dispose()


def _id(rt: Runtime, name: str) -> int:
    with rt.db.read() as db:
        return accounts.get_user(db, name).id


def _job(rt: Runtime, name: str, job_id: str, status: str, series: dict[str, int], *,
         attempt_started_at: float | None = None) -> None:
    with rt.db.write() as db:
        db.add(Job(id=job_id, user_id=_id(rt, name), username=name, name="x", exp="e", profile="h200", recipe="r",
                   status=status, requested_gpus=sum(series.values()), series_gpus=json.dumps(series),
                   spec_json="{}", submitted_at=NOW - 7200, attempt_started_at=attempt_started_at,
                   started_at=attempt_started_at))


def test_charge_adds_gpu_seconds_per_series_and_decays_what_was_stored_first(rt: Runtime) -> None:
    alice = _id(rt, "alice")
    with rt.db.write() as db:
        shares.charge(db, alice, {"h200": 2, "b200": 1}, 100.0, now=NOW, half_life=HALF_LIFE)
    with rt.db.write() as db:
        shares.charge(db, alice, {"h200": 1}, 50.0, now=NOW + HALF_LIFE, half_life=HALF_LIFE)
    with rt.db.read() as db:
        h200, b200 = db.get(ShareUsage, (alice, "h200")), db.get(ShareUsage, (alice, "b200"))
        assert h200 is not None and b200 is not None
        assert (h200.gpu_seconds, h200.at) == (200.0 / 2 + 50.0, NOW + HALF_LIFE)
        assert (b200.gpu_seconds, b200.at) == (100.0, NOW)  # not charged again: left as stored
        stored = shares.stored_usage(db, now=NOW + 2 * HALF_LIFE, half_life=HALF_LIFE)
    assert stored == {(alice, "h200"): 75.0, (alice, "b200"): 25.0}


def test_a_weight_is_set_and_read_back_and_others_keep_the_default(rt: Runtime) -> None:
    alice = _id(rt, "alice")
    with rt.db.write() as db:
        assert shares.set_weight(db, alice, 3, now=NOW) == 3.0
        shares.set_weight(db, alice, 2.5, now=NOW + 1)
    with rt.db.read() as db:
        assert shares.weights(db) == {alice: 2.5}


@pytest.mark.parametrize(("weight", "code"), [
    (0, "out_of_range"), (-1.0, "out_of_range"), (shares.MAX_WEIGHT * 2, "out_of_range"),
    (math.inf, "not_finite"), (math.nan, "not_finite"), ("2", "not_a_number"), (True, "not_a_number"),
    (None, "not_a_number"),
])
def test_a_weight_that_is_not_a_finite_number_above_zero_is_refused_with_its_field(rt: Runtime, weight: Any,
                                                                                    code: str) -> None:
    with rt.db.write() as db, pytest.raises(Rejected) as refused:
        shares.set_weight(db, _id(rt, "alice"), weight, now=NOW)
    (problem,) = refused.value.problems
    assert (problem.field, problem.code) == ("weight", code) and code in CODES
    assert problem.hint and refused.value.status == 400
    with rt.db.read() as db:
        assert shares.weights(db) == {}


def test_the_book_counts_running_attempts_on_the_fly_and_every_account_with_demand(rt: Runtime) -> None:
    alice, bob, carol = (_id(rt, name) for name in ("alice", "bob", "carol"))
    _job(rt, "alice", "r-run", "running", {"h200": 4}, attempt_started_at=NOW - 100)
    _job(rt, "alice", "r-placed", "submitted", {"h200": 2})
    _job(rt, "bob", "r-wait", "queued", {"h200": 8})
    _job(rt, "carol", "r-paused", "paused", {"h200": 8})  # holds nothing, asks for nothing
    with rt.db.write() as db:
        shares.charge(db, bob, {"h200": 1}, 60.0, now=NOW, half_life=HALF_LIFE)
        book = shares.book(db, fair_share=rt.settings.fair_share, capacity={"h200": 16}, now=NOW)
    assert book.usage(alice, "h200") == 400.0 and book.usage(bob, "h200") == 60.0
    assert (book.allocation(alice, "h200"), book.allocation(bob, "h200")) == (6, 0)
    assert book.share(alice, "h200") == book.share(bob, "h200") == 8.0  # carol has no demand
    assert book.share(carol, "h200") == 16 / 3


def test_the_report_shows_each_accounts_share_usage_allocation_borrowing_and_queue(rt: Runtime) -> None:
    alice, bob = _id(rt, "alice"), _id(rt, "bob")
    _job(rt, "alice", "r-1", "running", {"h200": 12}, attempt_started_at=NOW - 3600)
    _job(rt, "bob", "r-2", "queued", {"h200": 4})
    _job(rt, "bob", "r-3", "queued", {"h200": 4})
    with rt.db.write() as db:
        shares.set_weight(db, _id(rt, "carol"), 2.0, now=NOW)
        lines = shares.report(db, settings=rt.settings, capacity=rt.capacity, now=NOW)
    assert [line.username for line in lines] == ["alice", "bob", "carol"]
    a, b, c = lines
    assert (a.user_id, a.weight, a.share, a.allocated, a.borrowed, a.waiting_jobs) == (
        alice, 1.0, {"b200": 8.0, "h200": 8.0}, {"b200": 0, "h200": 12}, {"b200": 0.0, "h200": 4.0}, 0)
    assert a.usage_gpu_hours == {"b200": 0.0, "h200": 12.0}  # b200: nobody asks, so all 8 would be hers
    assert (b.user_id, b.share["h200"], b.borrowed["h200"], b.waiting_jobs) == (bob, 8.0, 0.0, 2)
    assert (c.weight, c.share["h200"], c.waiting_jobs) == (2.0, 16 * 2 / 4, 0)  # would get, if it asked
