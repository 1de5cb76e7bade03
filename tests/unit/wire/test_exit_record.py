"""The exit record: written atomically by `forge-launch`, read by an executor without trusting the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from starforge.wire import EXIT_FILE_VARIABLE, ExitRecord, read_exit_record, write_exit_record


def codes(path: Path) -> list[tuple[str, str]]:
    record, problems = read_exit_record(path)
    assert record is None
    return [(p.field, p.code) for p in problems]


def test_the_variable_name() -> None:
    assert EXIT_FILE_VARIABLE == "FORGE_EXIT_FILE"


def test_a_status_above_128_names_the_signal() -> None:
    assert ExitRecord.of_status(0, 1.5) == ExitRecord(0, None, 1.5)
    assert ExitRecord.of_status(128, 1.5).signal is None
    assert ExitRecord.of_status(143, 1.5) == ExitRecord(143, 15, 1.5)


def test_write_then_read_round_trips_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "exit.json"
    record = ExitRecord.of_status(137, 1700000000.25)
    write_exit_record(path, record)

    assert json.loads(path.read_text()) == {"exit_code": 137, "signal": 9, "finished_at": 1700000000.25}
    assert list(json.loads(path.read_text())) == ["exit_code", "signal", "finished_at"]
    assert read_exit_record(path) == (record, [])
    assert os.listdir(tmp_path) == ["exit.json"]
    write_exit_record(path, ExitRecord.of_status(0, 2.0))  # replaces the previous record
    assert read_exit_record(path)[0] == ExitRecord(0, None, 2.0)


def test_a_write_that_cannot_happen_raises_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        write_exit_record(tmp_path / "missing-dir" / "exit.json", ExitRecord(0))
    target = tmp_path / "is-a-dir"
    target.mkdir()
    with pytest.raises(OSError):
        write_exit_record(target, ExitRecord(0))
    assert sorted(os.listdir(tmp_path)) == ["is-a-dir"]


def test_fields_of_the_wrong_type_read_as_unknown(tmp_path: Path) -> None:
    path = tmp_path / "exit.json"
    path.write_text('{"exit_code": "3", "signal": 1.5, "finished_at": true}')
    assert read_exit_record(path) == (ExitRecord(None, None, None), [])
    path.write_text('{"exit_code": 3, "signal": null}')  # what a job may write itself
    assert read_exit_record(path) == (ExitRecord(3, None, None), [])
    path.write_text('{"exit_code": 0, "finished_at": 1e400}')
    assert read_exit_record(path)[0] == ExitRecord(0, None, None)


def test_absent_unreadable_and_malformed_records_are_problems(tmp_path: Path) -> None:
    path = tmp_path / "exit.json"
    assert codes(path) == [("exit", "missing_field")]
    path.write_text("{broken")
    assert codes(path) == [("exit", "invalid_json")]
    path.write_bytes(b"\xff\xfe\x00")
    assert codes(path) == [("exit", "invalid_json")]
    path.write_text("[" * 50_000)
    assert codes(path) == [("exit", "invalid_json")]
    path.write_text("[1, 2]")
    assert codes(path) == [("exit", "not_an_object")]
    path.write_text('{"exit_code": 0, "pad": "' + "x" * 70_000 + '"}')
    assert codes(path) == [("exit", "invalid_json")]  # larger than any record


def test_links_fifos_and_directories_are_refused_unread(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    write_exit_record(real, ExitRecord(0))
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert codes(link) == [("exit", "invalid_json")]
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert codes(fifo) == [("exit", "invalid_json")]  # returns at once: no writer is waited for
    assert codes(tmp_path) == [("exit", "invalid_json")]
