"""The proxy reaches a service's socket only beneath its run folder, never through a link a hostile job planted in
its own output folder (towards another account's service or any other socket of the machine)."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from starforge.console.services.errors import Unavailable
from starforge.console.services.serving.socket_door import connect_path, open_socket


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[Path]:
    """A listening socket outside the run folder: what a job would like the console to reach."""
    folder = tmp_path / "other-run" / "out" / ".service"
    folder.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(folder / "openai.sock"))
        listener.listen()
        yield folder


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "out").mkdir(parents=True)
    return run


def test_a_real_socket_is_opened_and_connects_through_its_descriptor(tmp_path: Path, elsewhere: Path) -> None:
    fd = open_socket(str(elsewhere.parent.parent))
    try:
        assert stat.S_ISSOCK(os.fstat(fd).st_mode)
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(connect_path(fd))  # the checked inode, whatever the length of the run folder's path
    finally:
        os.close(fd)


def test_a_socket_link_is_refused(tmp_path: Path, elsewhere: Path) -> None:
    run = _run(tmp_path)
    (run / "out" / ".service").mkdir()
    (run / "out" / ".service" / "openai.sock").symlink_to(elsewhere / "openai.sock")
    with pytest.raises(Unavailable):
        open_socket(str(run))


def test_a_service_folder_link_is_refused(tmp_path: Path, elsewhere: Path) -> None:
    run = _run(tmp_path)
    (run / "out" / ".service").symlink_to(elsewhere)
    with pytest.raises(Unavailable):
        open_socket(str(run))


def test_an_output_folder_link_is_refused(tmp_path: Path, elsewhere: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "out").symlink_to(elsewhere.parent)
    with pytest.raises(Unavailable):
        open_socket(str(run))


def test_a_regular_file_or_nothing_is_no_socket(tmp_path: Path) -> None:
    run = _run(tmp_path)
    with pytest.raises(Unavailable):
        open_socket(str(run))
    (run / "out" / ".service").mkdir()
    (run / "out" / ".service" / "openai.sock").write_text("not a socket")
    with pytest.raises(Unavailable):
        open_socket(str(run))
    with pytest.raises(Unavailable):
        open_socket("")
