"""Fair share, pure: decay, each account's share and what it borrows, the fair-order key, and the order itself (the
account with the least usage per weight first, interleaved within a cycle, each account's jobs in queue order)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from starforge.console.services.quota.capacity import Demand
from starforge.console.services.quota.fairshare import ShareBook, decayed, fair_order

HOUR = 3600.0
ALICE, BOB, CAROL = 1, 2, 3


@pytest.mark.parametrize(("value", "since", "now", "half_life", "expected"), [
    (100.0, 0.0, 10.0, 10.0, 50.0),  # one half-life: half
    (100.0, 0.0, 30.0, 10.0, 12.5),  # three: an eighth
    (100.0, 5.0, 5.0, 10.0, 100.0),  # no time: unchanged
    (100.0, 9.0, 5.0, 10.0, 100.0),  # measured after `now` (a clock step back): never grown
    (0.0, 0.0, 1e9, 10.0, 0.0),
    (100.0, 0.0, 10.0, 0.0, 100.0),  # no half-life: no decay
])
def test_decay_halves_the_value_every_half_life_and_never_grows_it(value: float, since: float, now: float,
                                                                   half_life: float, expected: float) -> None:
    assert math.isclose(decayed(value, since, now, half_life), expected)


def _book(**changes: Any) -> ShareBook:
    """16 h200 slots; alice, bob and carol with demand there; weights 1 unless given."""
    fields: dict[str, Any] = {"weights": {}, "default_weight": 1.0, "usage": {}, "allocation": {},
                              "capacity": {"h200": 16}, "demand": {"h200": {ALICE, BOB, CAROL}}}
    fields.update(changes)
    return ShareBook(**fields)


def test_the_share_divides_the_series_by_the_weights_of_the_accounts_with_demand_there() -> None:
    book = _book(weights={ALICE: 2.0}, capacity={"h200": 16, "b200": 8}, demand={"h200": {ALICE, BOB, CAROL}})
    assert (book.share(ALICE, "h200"), book.share(BOB, "h200"), book.share(CAROL, "h200")) == (8.0, 4.0, 4.0)
    assert book.share(4, "h200") == 16 * 1 / 5  # an account without demand: what it would get if it asked
    assert book.share(ALICE, "b200") == 8.0  # nobody else asks for b200
    assert book.share(ALICE, "none") == 0.0


def test_borrowed_is_the_allocation_beyond_the_share() -> None:
    book = _book(allocation={(ALICE, "h200"): 10, (BOB, "h200"): 4, (CAROL, "h200"): 2})
    assert [book.borrowed(user, "h200") for user in (ALICE, BOB, CAROL)] == [10 - 16 / 3, 0.0, 0.0]


def test_assume_counts_a_placement_and_a_newcomer_divides_the_series_again() -> None:
    book = _book(demand={"h200": {ALICE}})
    assert book.share(ALICE, "h200") == 16.0
    before = book.version
    book.assume(BOB, {"h200": 4})
    assert book.allocation(BOB, "h200") == 4 and book.version == before + 1
    assert book.share(ALICE, "h200") == 8.0 and book.borrowed(BOB, "h200") == 0.0


def test_the_key_is_usage_then_allocation_over_the_weight_summed_over_the_jobs_series() -> None:
    book = _book(weights={ALICE: 2.0}, usage={(ALICE, "h200"): 100.0, (ALICE, "b200"): 40.0},
                 allocation={(ALICE, "h200"): 4, (ALICE, "b200"): 2})
    assert book.key(ALICE, {"h200": 1}) == (50.0, 2.0)
    assert book.key(ALICE, {"h200": 1, "b200": 1}) == (70.0, 3.0)
    assert book.key(BOB, {"h200": 8}) == (0.0, 0.0)


def _demand(job_id: str, user: int, gpus: int = 1, series: str = "h200") -> Demand:
    return Demand(job_id, user, gpus, {series: gpus}, 0, 0, 0)


def _served(waiting: list[Demand], book: ShareBook, *, placed: bool = True) -> Iterator[str]:
    """Yield the ids in fair order, placing each job (assumed in the book) when `placed`."""
    for demand in fair_order(waiting, book):
        if placed:
            book.assume(demand.user_id, demand.series_gpus)
        yield demand.job_id


def test_the_account_with_less_usage_per_weight_goes_first_whatever_the_queue_order() -> None:
    waiting = [_demand("a1", ALICE), _demand("a2", ALICE), _demand("b1", BOB)]
    book = _book(usage={(ALICE, "h200"): 1000.0, (BOB, "h200"): 10.0})
    assert list(_served(waiting, book, placed=False)) == ["b1", "a1", "a2"]


def test_a_weight_scales_the_usage_it_is_compared_by() -> None:
    waiting = [_demand("a1", ALICE), _demand("b1", BOB)]
    usage = {(ALICE, "h200"): 300.0, (BOB, "h200"): 200.0}
    assert list(_served(waiting, _book(usage=usage), placed=False)) == ["b1", "a1"]
    assert list(_served(waiting, _book(usage=usage, weights={ALICE: 2.0}), placed=False)) == ["a1", "b1"]


def test_a_cycle_interleaves_accounts_of_equal_usage_by_their_allocation() -> None:
    waiting = [_demand(f"a{i}", ALICE) for i in range(3)] + [_demand(f"b{i}", BOB) for i in range(3)]
    assert list(_served(waiting, _book())) == ["a0", "b0", "a1", "b1", "a2", "b2"]


def test_an_account_that_was_not_served_keeps_its_turn_and_its_jobs_keep_their_order() -> None:
    waiting = [_demand("a1", ALICE, 8), _demand("a2", ALICE), _demand("b1", BOB)]
    book = _book(usage={(BOB, "h200"): 50.0})
    assert list(_served(waiting, book, placed=False)) == ["a1", "a2", "b1"]


def test_ties_follow_the_given_queue_order() -> None:
    waiting = [_demand("c1", CAROL), _demand("a1", ALICE), _demand("b1", BOB)]
    assert list(_served(waiting, _book(), placed=False)) == ["c1", "a1", "b1"]


def test_the_account_just_served_is_keyed_again_after_the_caller_acted() -> None:
    waiting = [_demand("a1", ALICE, 4), _demand("a2", ALICE), _demand("b1", BOB), _demand("b2", BOB)]
    book = _book(allocation={(BOB, "h200"): 2})
    order = fair_order(waiting, book)
    assert next(order).job_id == "a1"  # alice holds nothing yet
    book.assume(ALICE, {"h200": 4})  # placed: alice now holds 4, bob 2
    assert [demand.job_id for demand in order] == ["b1", "b2", "a2"]


def test_an_empty_queue_yields_nothing() -> None:
    assert list(fair_order([], _book())) == []
