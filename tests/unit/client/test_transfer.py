"""Packing a dataset for push (regular files only), unpacking a downloaded artifact (hostile input), and the
`--train-dataset REF[:PATH]` flag."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from starforge.client import ConsoleError
from starforge.client._transfer import pack_path, unpack_archive
from starforge.lab.jobspec import dataset_split


def test_a_folder_packs_its_regular_files_by_relative_name(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.jsonl").write_text("a\n")
    (tmp_path / "d" / "sub" / "b.jsonl").write_text("bb\n")
    packed = pack_path(tmp_path / "d")
    with packed.handle, tarfile.open(fileobj=packed.handle, mode="r:gz") as tar:
        assert sorted(tar.getnames()) == ["a.jsonl", "sub/b.jsonl"]
    assert (packed.files, packed.total_bytes) == (2, 5)
    single = pack_path(tmp_path / "d" / "a.jsonl")
    with single.handle, tarfile.open(fileobj=single.handle, mode="r:gz") as tar:
        assert tar.getnames() == ["a.jsonl"]


def test_links_fifos_and_empty_folders_are_refused_before_sending(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "ok.txt").write_text("x")
    os.symlink("/etc/passwd", tmp_path / "d" / "leak")
    with pytest.raises(ConsoleError, match="not a regular file"):
        pack_path(tmp_path / "d")
    (tmp_path / "e").mkdir()
    os.mkfifo(tmp_path / "e" / "pipe")
    with pytest.raises(ConsoleError, match="not a regular file"):
        pack_path(tmp_path / "e")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConsoleError, match="holds no file"):
        pack_path(tmp_path / "empty")


def test_a_hostile_download_writes_nothing(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    buffer.seek(0)
    with pytest.raises(ConsoleError, match="refused"):
        unpack_archive(buffer, tmp_path / "dest")
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize(("flag", "expected"), [
    ("alice/chat@v1", {"dataset": "alice/chat@v1"}),
    ("alice/chat@v1:train.jsonl", {"dataset": "alice/chat@v1", "path": "train.jsonl"}),
    ("alice/chat@v1:split/val.jsonl", {"dataset": "alice/chat@v1", "path": "split/val.jsonl"}),
    ("alice/chat@v1:", {"dataset": "alice/chat@v1"}),
    ("alice/chat:x", {"dataset": "alice/chat", "path": "x"}),
])
def test_dataset_flags_split_at_the_colon_after_the_version(flag: str, expected: dict[str, str]) -> None:
    assert dataset_split(flag) == expected
