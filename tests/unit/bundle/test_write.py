"""write_bundle: deterministic bytes, member order, CRLF rule, modes, headers, progress and refusals."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest

from starforge.bundle import BundleFile, BundleInfo, bundle_sha256, needs_lf, pack_bytes, write_bundle


def _files(root: Path) -> list[BundleFile]:
    (root / "exp").mkdir()
    (root / "exp" / "run.sh").write_bytes(b"#!/bin/sh\r\necho hi\r\n")
    (root / "exp" / "run.sh").chmod(0o755)
    (root / "exp" / "config.yaml").write_bytes(b"a: 1\r\nb: 2\r\n")
    return [
        BundleFile("exp/run.sh", root / "exp" / "run.sh"),
        BundleFile("exp/config.yaml", root / "exp" / "config.yaml"),
        BundleFile("configs/app.conf", b"k=v\r\n"),
        BundleFile("common/sf", b"x\r\ny\r\n"),
        BundleFile("common/data.bin", bytes(range(256)) * 3),
    ]


def _members(data: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return tar.getmembers()


def _content(data: bytes, name: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        handle = tar.extractfile(name)
        assert handle is not None
        return handle.read()


def test_same_files_give_identical_bytes_and_digest(tmp_path: Path) -> None:
    files = _files(tmp_path)
    first, info1 = pack_bytes(files)
    os.utime(tmp_path / "exp" / "run.sh", (1, 1))  # mtimes of sources never leak into the bundle
    second, info2 = pack_bytes(files)
    assert first == second
    assert info1 == info2
    assert info1 == BundleInfo(
        files=5, bytes=len(first), sha256="sha256:" + hashlib.sha256(first).hexdigest()
    )
    assert bundle_sha256(first) == info1.sha256


def test_members_keep_the_given_order_without_directory_entries(tmp_path: Path) -> None:
    files = _files(tmp_path)
    data, _ = pack_bytes(list(reversed(files)))
    assert [m.name for m in _members(data)] == [f.arcname for f in reversed(files)]
    assert all(m.isreg() for m in _members(data))


def test_member_metadata_is_normalised(tmp_path: Path) -> None:
    data, _ = pack_bytes(_files(tmp_path))
    modes = {}
    for member in _members(data):
        assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (0, 0, 0, "", "")
        modes[member.name] = member.mode
    assert modes == {
        "exp/run.sh": 0o755,
        "exp/config.yaml": 0o644,
        "configs/app.conf": 0o644,
        "common/sf": 0o644,
        "common/data.bin": 0o644,
    }


def test_gzip_header_has_no_mtime_and_no_file_name(tmp_path: Path) -> None:
    out = tmp_path / "bundle.tar.gz"
    with out.open("wb") as handle:
        write_bundle(_files(tmp_path), handle)
    header = out.read_bytes()[:10]
    assert header[:3] == b"\x1f\x8b\x08"
    assert header[3] == 0  # FLG: no FNAME, no FCOMMENT, no FEXTRA
    assert header[4:8] == b"\0\0\0\0"  # MTIME


def test_crlf_becomes_lf_only_for_sf_sh_and_conf(tmp_path: Path) -> None:
    data, _ = pack_bytes(_files(tmp_path))
    assert _content(data, "exp/run.sh") == b"#!/bin/sh\necho hi\n"
    assert _content(data, "configs/app.conf") == b"k=v\n"
    assert _content(data, "common/sf") == b"x\ny\n"
    assert _content(data, "exp/config.yaml") == b"a: 1\r\nb: 2\r\n"
    assert _content(data, "common/data.bin") == bytes(range(256)) * 3


def test_crlf_conversion_can_be_turned_off(tmp_path: Path) -> None:
    data, _ = pack_bytes(_files(tmp_path), crlf_to_lf=False)
    assert _content(data, "exp/run.sh") == b"#!/bin/sh\r\necho hi\r\n"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("sf", True),
        ("a/b/sf", True),
        ("x.sh", True),
        ("a/x.conf", True),
        ("sfx", False),
        ("x.shx", False),
        ("x.SH", False),
        ("sh", False),
        ("x.yaml", False),
    ],
)
def test_needs_lf(name: str, expected: bool) -> None:
    assert needs_lf(name) is expected


def test_progress_reports_growing_byte_counts_up_to_the_total(tmp_path: Path) -> None:
    seen: list[int] = []
    data, info = pack_bytes(_files(tmp_path), progress=seen.append)
    assert seen and seen == sorted(seen)
    assert seen[-1] == info.bytes == len(data)


def test_empty_bundle_is_a_valid_archive() -> None:
    data, info = pack_bytes([])
    assert info.files == 0
    assert _members(data) == []
    assert gzip.decompress(data).count(0) == len(gzip.decompress(data))


@pytest.mark.parametrize("name", ["", "/abs", "../up", "a/../b", "a\\b", "a//b", "./a", "a/", "nul\0"])
def test_unsafe_arcnames_are_a_caller_error(name: str) -> None:
    with pytest.raises(ValueError):
        pack_bytes([BundleFile(name, b"x")])


def test_repeated_arcname_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="twice"):
        pack_bytes([BundleFile("a", b"1"), BundleFile("a", b"2")])


def test_long_and_unicode_names_round_trip() -> None:
    names = ["exp/" + "d" * 120 + "/file.txt", "exp/données/é.txt", "exp/" + "/".join(["seg"] * 60)]
    data, _ = pack_bytes([BundleFile(n, n.encode()) for n in names])
    assert [m.name for m in _members(data)] == names
