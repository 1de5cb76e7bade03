"""The per-client limits of a console of several processes are one limit: every process counts in one shared file
(`throttle_keys.SharedKeys`), so a client alternating between them is refused as one process alone would refuse it,
and the table stays bounded and private to the console's user."""

from __future__ import annotations

import multiprocessing
import stat
from pathlib import Path

import pytest

from starforge.console.services import throttle
from starforge.console.services.errors import AuthRequired, TooManyRequests
from starforge.console.services.throttle import Backoff, Limits, Rate, Throttles
from starforge.console.services.throttle_keys import SharedKeys
from tests.integration.test_web_pages import Clock  # the limiters' clock a test moves


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    path = tmp_path / "throttles.db"
    SharedKeys.reset(path)
    return path


def _fail(throttles: Throttles, address: str) -> int:
    try:
        with throttles.sign_in.attempt(address):
            raise AuthRequired("bad token")
    except AuthRequired:
        return 401
    except TooManyRequests:
        return 429


def test_failures_alternating_between_processes_meet_one_backoff(shared: Path) -> None:
    clock = Clock()
    first, second = Throttles(clock=clock, shared=shared), Throttles(clock=clock, shared=shared)
    free = Limits().sign_in.free
    answers = [_fail((first, second)[n % 2], "203.0.113.9") for n in range(2 * free)]
    assert answers == [401] * (free + 1) + [429] * (free - 1)  # as one process: free ones, then the wait begins
    assert _fail(first, "203.0.113.10") == 401  # another address is its own
    clock.now += 1
    assert _fail(second, "203.0.113.9") == 401 and _fail(first, "203.0.113.9") == 429  # 1 s, then 2 s


def _start_device_logins(path: str, count: int, queue: multiprocessing.Queue) -> None:
    throttles = Throttles(Limits(device_codes=Rate(10, 3600.0)), shared=Path(path))
    taken = 0
    for _ in range(count):
        try:
            throttles.device_codes.take("198.51.100.4")
            taken += 1
        except TooManyRequests:
            pass
    queue.put(taken)


def test_processes_taking_at_once_share_one_rate(shared: Path) -> None:
    queue: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
    workers = [multiprocessing.get_context("fork").Process(target=_start_device_logins, args=(str(shared), 20, queue))
               for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert sum(queue.get(timeout=5) for _ in workers) == 10  # one burst of ten for all three, not ten each


def test_the_shared_table_stays_bounded(shared: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(throttle, "MAX_KEYS", 5)
    clock = Clock()
    throttles = Throttles(Limits(sign_in=Backoff(forget=60.0)), clock=clock, shared=shared)
    for n in range(8):
        _fail(throttles, f"192.0.2.{n}")
    kept = [key for key, _values in SharedKeys(shared, "sign_in").entries()]
    assert kept == [f"192.0.2.{n}" for n in range(3, 8)]  # at most five: the oldest went first
    clock.now += 61  # every key idle now: they go before any newer one
    _fail(throttles, "192.0.2.100")
    assert [key for key, _values in SharedKeys(shared, "sign_in").entries()] == ["192.0.2.100"]


def test_the_file_is_made_afresh_and_private(shared: Path) -> None:
    Throttles(shared=shared).sign_in.failed("203.0.113.1")
    SharedKeys.reset(shared)  # the next console run
    assert SharedKeys(shared, "sign_in").count() == 0
    assert stat.S_IMODE(shared.stat().st_mode) == 0o600
