"""extract_bundle on acceptable bundles: contents, modes, links as copies, skipped prefixes, sources, clashes."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from starforge.bundle import (
    BundleFile,
    BundleLimits,
    UnsafeBundle,
    bundle_sha256,
    extract_bundle,
    inspect_bundle,
    pack_bytes,
)

from .craft import Entry, craft, gz, snapshot

SYM, HARD = tarfile.SYMTYPE, tarfile.LNKTYPE


class _Pipe(io.RawIOBase):
    """A readable stream that cannot seek, like a request body."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        chunk = self._data.read(min(len(buffer), 777))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def test_round_trip_writes_contents_and_modes(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_bytes(b"#!/bin/sh\r\necho hi\r\n")
    script.chmod(0o755)
    data, _ = pack_bytes(
        [
            BundleFile("exp/run.sh", script),
            BundleFile("exp/config.yaml", b"a: 1\n"),
            BundleFile("common/deep/er/util.py", b"x = 1\n"),
        ]
    )
    dest = tmp_path / "work"
    assert extract_bundle(data, dest) == ["exp/run.sh", "exp/config.yaml", "common/deep/er/util.py"]
    assert (dest / "exp/run.sh").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert (dest / "exp/run.sh").stat().st_mode & 0o777 == 0o755
    assert (dest / "exp/config.yaml").stat().st_mode & 0o777 == 0o644
    assert (dest / "common/deep/er/util.py").read_bytes() == b"x = 1\n"


def test_starforge_files_in_the_bundle_are_checked_but_not_written(tmp_path: Path) -> None:
    data, _ = pack_bytes([BundleFile(".starforge/jobspec.json", b"{}"), BundleFile("exp/a", b"1")])
    dest = tmp_path / "work"
    assert extract_bundle(data, dest) == ["exp/a"]
    assert not (dest / ".starforge").exists()
    assert extract_bundle(gz(craft([Entry(".starforge", b"file in the way")])), tmp_path / "w2") == []
    assert extract_bundle(data, tmp_path / "w3", skip_prefixes=()) == [".starforge/jobspec.json", "exp/a"]


def test_links_inside_the_bundle_become_copies_of_earlier_files(tmp_path: Path) -> None:
    data = gz(
        craft(
            [
                Entry("exp/data.txt", b"payload", mode=0o755),
                Entry("exp/sym.txt", type=SYM, linkname="data.txt"),
                Entry("exp/sub/up.txt", type=SYM, linkname="../data.txt"),
                Entry("hard.txt", type=HARD, linkname="exp/data.txt"),
                Entry("chain.txt", type=SYM, linkname="hard.txt"),
                Entry("exp/later.txt", type=SYM, linkname="future.txt"),
                Entry("exp/dirlink", type=SYM, linkname="."),
                Entry("exp/future.txt", b"late"),
            ]
        )
    )
    dest = tmp_path / "work"
    names = extract_bundle(data, dest)
    assert names == [
        "exp/data.txt",
        "exp/sym.txt",
        "exp/sub/up.txt",
        "hard.txt",
        "chain.txt",
        "exp/future.txt",
    ]
    for name in names[:-1]:
        path = dest / name
        assert not path.is_symlink() and path.read_bytes() == b"payload"
        assert path.stat().st_mode & 0o777 == 0o755
    assert not (dest / "exp/later.txt").exists() and not (dest / "exp/dirlink").exists()
    assert not any(p.is_symlink() for p in dest.rglob("*"))


def test_directory_members_are_accepted_and_formats_of_other_tools_read(tmp_path: Path) -> None:
    long_name = "exp/" + "d" * 80 + "/" + "n" * 60  # USTAR splits it into prefix and name
    for fmt in (tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        data = gz(craft([Entry("exp", type=tarfile.DIRTYPE, mode=0o755), Entry(long_name, b"long")], fmt=fmt))
        dest = tmp_path / f"work{fmt}"
        assert extract_bundle(data, dest) == [long_name]
        assert (dest / long_name).read_bytes() == b"long"


def test_streams_are_accepted_and_rewound(tmp_path: Path) -> None:
    data, info = pack_bytes([BundleFile("exp/a", b"1" * 10_000)])
    stream = io.BytesIO(b"PREFIX" + data)
    stream.seek(6)
    assert inspect_bundle(stream) == []
    assert stream.tell() == 6
    assert extract_bundle(stream, tmp_path / "w1") == ["exp/a"]
    assert stream.tell() == 6
    assert bundle_sha256(stream) == info.sha256 and stream.tell() == 6
    assert extract_bundle(io.BufferedReader(_Pipe(data)), tmp_path / "w2") == ["exp/a"]
    assert inspect_bundle(io.BufferedReader(_Pipe(b"junk" * 100))) != []
    too_big = inspect_bundle(io.BufferedReader(_Pipe(data)), BundleLimits(max_bytes=100))
    assert [p.code for p in too_big] == ["bundle_too_large"]


def test_existing_files_are_never_overwritten(tmp_path: Path) -> None:
    dest = tmp_path / "work"
    (dest / "exp").mkdir(parents=True)
    (dest / "exp/a").write_text("mine")
    data, _ = pack_bytes([BundleFile("exp/a", b"theirs")])
    with pytest.raises(UnsafeBundle) as raised:
        extract_bundle(data, dest)
    assert "already exists" in raised.value.problems[0].message
    assert (dest / "exp/a").read_text() == "mine"


def test_a_symlink_already_in_the_destination_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "work"
    dest.mkdir()
    os.symlink(outside, dest / "exp")
    before = snapshot(outside)
    data, _ = pack_bytes([BundleFile("exp/a", b"x")])
    with pytest.raises(UnsafeBundle) as raised:
        extract_bundle(data, dest)
    assert raised.value.problems[0].field == "bundle"
    assert snapshot(outside) == before


def test_unsafe_bundle_message_lists_the_problems() -> None:
    data = gz(craft([Entry("../x", b"1")]))
    with pytest.raises(UnsafeBundle, match=r'- bundle: member "\.\./x" has a "\.\." component'):
        extract_bundle(data, Path("/nonexistent/never/created"))
    assert not Path("/nonexistent").exists()
