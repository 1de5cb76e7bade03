"""SQLite writers take their turn on one lock across processes (`store.write_turn`): while one process is inside a
write transaction another cannot begin one, a nested write keeps the turn until the outer one ends, and a forked
process takes its own turn instead of sharing its parent's."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from starforge.console.store import Database


def _free(path: Path) -> bool:
    """Whether another open of the turn's file can take it now (as another process would)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing lets the lock go
    return True


def test_a_write_holds_the_turn_of_every_process_until_it_ends(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'console.db'}")
    db.migrate()
    turn = tmp_path / "console.db.write-turn"
    try:
        with db.write():
            assert not _free(turn)
            with db.write():  # nested: the same turn
                assert not _free(turn)
            assert not _free(turn)  # the inner one ending gave nothing back
        assert _free(turn)
        with db.read():
            assert _free(turn)  # readers never take it
    finally:
        db.dispose()


def test_a_forked_process_waits_for_its_parents_turn(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'console.db'}")
    db.migrate()
    try:
        with db.write():
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: its own descriptor, so the parent's turn blocks it
                os.close(read)
                turn = db._write_turn
                fd = turn._descriptor()  # type: ignore[attr-defined]
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    os.write(write, b"took it")
                except BlockingIOError:
                    os.write(write, b"waited")
                os._exit(0)
            os.close(write)
            said = os.read(read, 16)
            os.waitpid(pid, 0)
        assert said == b"waited"
    finally:
        db.dispose()
