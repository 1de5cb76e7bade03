"""Leader election and fencing on real stores: one leader per database, elected by a lock (a file lock on SQLite,
an advisory lock on PostgreSQL); the epoch it takes fences every write of its scheduler, so a process that lost the
lead can change nothing, even inside a transaction begun before the new leader took over."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from starforge.console.services.leadership import (
    Elector,
    FileLock,
    LostLead,
    Member,
    PostgresLock,
    check,
    current,
    take,
)
from starforge.console.store import Database
from starforge.console.store.models import Lock
from tests.integration.conftest import _postgres_database


def _wait(condition: Callable[[], bool], what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    db = Database(f"sqlite:///{tmp_path / 'console.db'}")
    db.migrate()
    yield db
    db.dispose()


@pytest.fixture(scope="module")
def pg_url(postgres_admin_url: str) -> str:
    return _postgres_database(postgres_admin_url)


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[Database]:
    db = Database(pg_url)
    db.migrate()
    yield db
    db.dispose()


def member(name: str) -> Member:
    return Member(name, "c0ffee", "host", 1000 + len(name))


def test_a_file_lock_has_one_holder_until_it_lets_go(tmp_path: Path) -> None:
    first, second = FileLock(tmp_path / "leader.lock"), FileLock(tmp_path / "leader.lock")
    assert first.acquire() and first.held()
    assert not second.acquire() and not second.held()
    first.release()
    assert second.acquire()
    second.release()


def test_an_advisory_lock_has_one_holder_and_goes_with_its_connection(pg_url: str) -> None:
    first, second = PostgresLock(pg_url, key=4242), PostgresLock(pg_url, key=4242)
    assert first.acquire() and first.held()
    assert not second.acquire()
    first.release()  # the session ends: the lock with it
    assert second.acquire() and second.held()
    second.release()
    assert not second.held()


def test_taking_the_lead_increments_the_epoch_and_names_the_holder(sqlite_db: Database) -> None:
    with sqlite_db.read() as db:
        assert current(db) is None
    with sqlite_db.write() as db:
        assert take(db, member("a"), now=10.0) == 1
    with sqlite_db.write() as db:
        assert take(db, member("bb"), now=20.0) == 2
    with sqlite_db.read() as db:
        leader = current(db)
    assert leader is not None and (leader.epoch, leader.holder, leader.pid, leader.since) == (2, "bb", 1002, 20.0)


@pytest.mark.parametrize("backend", ["sqlite", "pg"])
def test_a_fenced_write_of_an_old_epoch_changes_nothing(backend: str, request: pytest.FixtureRequest) -> None:
    db: Database = request.getfixturevalue(f"{backend}_db")
    with db.write() as session:
        mine = take(session, member("old"), now=1.0)
    fenced = db.fenced(lambda session: check(session, epoch=mine))
    with fenced.write() as session:
        session.add(Lock(name="by-old-1"))  # still the leader: it writes
    with db.write() as session:
        take(session, member("new"), now=2.0)
    with pytest.raises(LostLead), fenced.write() as session:
        session.add(Lock(name="by-old-2"))
    with db.read() as session:
        names = set(session.scalars(select(Lock.name)))
    assert "by-old-1" in names and "by-old-2" not in names


def test_on_postgres_the_new_leader_takes_over_only_after_the_old_leaders_transaction(pg_db: Database) -> None:
    with pg_db.write() as session:
        mine = take(session, member("old"), now=1.0)
    fenced = pg_db.fenced(lambda session: check(session, epoch=mine))
    inside, took = threading.Event(), threading.Event()
    release = threading.Event()

    def old_leader() -> None:
        with fenced.write() as session:  # passed the fence: holds the row until it commits
            inside.set()
            release.wait(10)
            session.add(Lock(name="late-but-fenced-in-time"))

    def new_leader() -> None:
        with pg_db.write() as session:
            take(session, member("new"), now=2.0)
        took.set()

    old = threading.Thread(target=old_leader)
    old.start()
    assert inside.wait(10)
    new = threading.Thread(target=new_leader)
    new.start()
    assert not took.wait(0.3)  # the take waits for the old leader's transaction (not a timing assertion: it must wait)
    release.set()
    old.join(10)
    new.join(10)
    assert took.is_set()
    with pytest.raises(LostLead), fenced.write():
        pass


def test_electors_on_one_database_elect_one_leader_and_the_standby_takes_over(sqlite_db: Database,
                                                                             tmp_path: Path) -> None:
    running: dict[str, int] = {}
    stopped: list[str] = []

    def work(name: str) -> Callable[[int], Callable[[], None]]:
        def elected(epoch: int) -> Callable[[], None]:
            running[name] = epoch
            return lambda: stopped.append(name)
        return elected

    first = Elector(sqlite_db, FileLock(tmp_path / "leader.lock"), member("a"), work("a"), retry=0.02)
    second = Elector(sqlite_db, FileLock(tmp_path / "leader.lock"), member("bb"), work("bb"), retry=0.02)
    first.start()
    second.start()
    try:
        assert first.leading and not second.leading and running == {"a": 1}
        first.stop()
        assert stopped == ["a"]
        _wait(lambda: second.leading, "the standby to take the lead")
        assert running == {"a": 1, "bb": 2} and second.epoch == 2
    finally:
        first.stop()
        second.stop()
    assert stopped == ["a", "bb"]


def test_a_leader_whose_epoch_was_taken_stops_its_work(sqlite_db: Database, tmp_path: Path) -> None:
    stopped = threading.Event()
    elector = Elector(sqlite_db, FileLock(tmp_path / "leader.lock"), member("a"),
                      lambda _epoch: stopped.set, retry=0.02, beat_every=0.02)
    elector.start()
    try:
        assert elector.leading
        with sqlite_db.write() as session:  # another process, which believes it holds the lock, takes the lead
            take(session, member("intruder"), now=time.time())
        assert stopped.wait(10)
        assert not elector.leading
    finally:
        elector.stop()
