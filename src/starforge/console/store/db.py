"""The database handle: engines, write/read sessions, the capacity lock and migrations, per backend in one place.

SQLite runs in WAL mode; every write transaction starts with BEGIN IMMEDIATE so writers are serialised and a
decision taken inside one (quota, capacity) cannot race another. PostgreSQL takes a row lock (`FOR UPDATE`) on the
`capacity` lock row instead. Read sessions never take the write lock.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, select
from sqlalchemy.orm import Session, sessionmaker

from .fresh_schema import create_if_empty
from .models import Leadership, Lock
from .schema_version import is_current
from .signals import ChangeSignal, watch_accounts
from .write_turn import WriteTurn

__all__ = ["Database"]

_MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def _sqlite_engine(url: str, *, immediate: bool) -> Engine:
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": 60}, pool_size=8, max_overflow=32, pool_timeout=60
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Database:
    """Own the engines of one console database and hand out transactional sessions."""

    def __init__(self, url: str, *, changes: Path | None = None) -> None:
        """Open `url`; `changes` is the accounts change file shared by every process on this database
        (`Settings.accounts_changes`; None: changes are seen by this process only)."""
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        file = Path(url.split("///", 1)[1]) if self.is_sqlite else None
        if file is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
            self._write_engine = _sqlite_engine(url, immediate=True)
            self._read_engine = _sqlite_engine(url, immediate=False)
        else:
            self._write_engine = create_engine(url, pool_size=10, max_overflow=40, pool_pre_ping=True, pool_timeout=60)
            self._read_engine = self._write_engine
        self._writer = sessionmaker(self._write_engine, expire_on_commit=False)
        self._write_turn: AbstractContextManager[Any] = WriteTurn(file) if file is not None else nullcontext()
        self._reader = sessionmaker(self._read_engine, expire_on_commit=False)
        self.account_changes = ChangeSignal(changes)
        self._fence: Callable[[Session], None] | None = None
        for factory in (self._writer, self._reader):
            watch_accounts(factory, self.account_changes)

    @contextmanager
    def write(self) -> Iterator[Session]:
        """Yield a session in a write transaction, committed on success and rolled back on error.

        On SQLite the writers queue on a turn first (`write_turn`: this process's threads, then every process of the
        database): SQLite has one writer at a time anyway, and a writer blocked on `BEGIN IMMEDIATE` would poll with
        growing sleeps (its busy handler) instead of starting the moment the previous writer commits."""
        with self._write_turn, self._writer.begin() as session:
            if self._fence is not None:
                self._fence(session)
            yield session

    def fenced(self, fence: Callable[[Session], None]) -> Database:
        """Return a handle on the same engines whose every write transaction first runs `fence` on its session
        (which raises to refuse the whole transaction): the leader's scheduler writes through one
        (`services.leadership.check`)."""
        other = copy.copy(self)
        other._fence = fence
        return other

    @contextmanager
    def read(self) -> Iterator[Session]:
        """Yield a session for reads (no write lock on SQLite)."""
        with self._reader() as session, session.begin():
            yield session

    def lock_capacity(self, session: Session) -> None:
        """Serialise quota and capacity decisions: a row lock on PostgreSQL (SQLite's writer is already exclusive)."""
        if not self.is_sqlite:
            session.execute(select(Lock).where(Lock.name == "capacity").with_for_update())

    def migrate(self) -> None:
        """Apply every Alembic migration (under an advisory lock on PostgreSQL), then make sure the lock and leadership
        rows exist; an empty database gets the newest schema without them (`fresh_schema`).

        A database that already records the newest revision is left alone without loading Alembic (console start)."""
        with self._write_engine.connect() as connection:
            current = is_current(connection, _MIGRATIONS / "versions")
        if not current:
            with self._migration_lock() as connection:
                with connection.begin():
                    created = create_if_empty(connection, _MIGRATIONS / "versions")
                if not created:
                    self._upgrade(connection)
        with self.write() as session:  # the rows every console database holds, whichever way its schema was made
            if session.get(Lock, "capacity") is None:
                session.add(Lock(name="capacity"))
            if session.get(Leadership, 1) is None:
                session.add(Leadership(id=1))

    @contextmanager
    def _migration_lock(self) -> Iterator[Connection]:
        """Yield a connection of the writer's, holding the migrations' advisory lock on PostgreSQL: consoles starting
        at once on one database make its schema one after the other (the next sees the tables and upgrades)."""
        with self._write_engine.connect() as connection:
            if not self.is_sqlite:
                connection.exec_driver_sql("SELECT pg_advisory_lock(727211)")
                connection.commit()
            try:
                yield connection
            finally:
                if not self.is_sqlite:
                    connection.rollback()  # whatever a failed step left open, so that the unlock can run
                    connection.exec_driver_sql("SELECT pg_advisory_unlock(727211)")
                    connection.commit()

    def _upgrade(self, connection: Connection) -> None:
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("path_separator", "os")
        config.set_main_option("script_location", str(_MIGRATIONS))
        config.set_main_option("recursive_version_locations", "true")
        config.set_main_option("version_locations", str(_MIGRATIONS / "versions"))
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        connection.commit()

    def dispose(self) -> None:
        """Close every pooled connection."""
        self._write_engine.dispose()
        if self._read_engine is not self._write_engine:
            self._read_engine.dispose()
