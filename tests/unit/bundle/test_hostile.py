"""Hostile bundles crafted by hand: each is refused with field "bundle", and nothing is written anywhere."""

from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path

import pytest

from starforge.bundle import (
    BundleFile,
    BundleLimits,
    UnsafeBundle,
    extract_bundle,
    inspect_bundle,
    pack_bytes,
)
from starforge.contract import CODES, Problem

from .craft import Entry, craft, gz, snapshot

MiB = 1024 * 1024
SYM, HARD = tarfile.SYMTYPE, tarfile.LNKTYPE


def _zeros_member(name: str, size: int) -> bytes:
    """Return an uncompressed tar holding one file of `size` zero bytes, streamed (never held in memory twice)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.size = size
        tar.addfile(info, io.BytesIO(bytes(size)))
    return buffer.getvalue()


def _header_only(name: str, claimed: int) -> bytes:
    """Return a tar whose only member claims `claimed` bytes of data that never follow."""
    info = tarfile.TarInfo(name)
    info.size = claimed
    return info.tobuf(tarfile.GNU_FORMAT) + bytes(1024)


def _valid() -> bytes:
    return pack_bytes([BundleFile("exp/a.txt", b"a" * 5000), BundleFile("exp/b.txt", b"b" * 5000)])[0]


def _pax_chain(count: int) -> bytes:
    block = tarfile.TarInfo("x")
    records = b"12 comment=\n"
    header = tarfile.TarInfo("././@PaxHeader")
    header.type = tarfile.XHDTYPE
    header.size = len(records)
    one = header.tobuf(tarfile.USTAR_FORMAT) + records + bytes(512 - len(records))
    return one * count + block.tobuf(tarfile.USTAR_FORMAT) + bytes(1024)


def _oversized_pax(size: int) -> bytes:
    key = b"comment="
    length = size
    body = b"%d " % length + key
    record = body + b"c" * (length - len(body) - 1) + b"\n"
    header = tarfile.TarInfo("././@PaxHeader")
    header.type = tarfile.XHDTYPE
    header.size = len(record)
    padded = record + bytes(-len(record) % 512)
    return header.tobuf(tarfile.USTAR_FORMAT) + padded + tarfile.TarInfo("x").tobuf() + bytes(1024)


def _hardlink_bomb(copies: int) -> bytes:
    entries = [Entry("big.bin", random.Random(3).randbytes(MiB))]
    entries += [Entry(f"copy{i}", type=HARD, linkname="big.bin") for i in range(copies)]
    return craft(entries)


UNSAFE = {
    "absolute path": gz(craft([Entry("/etc/evil", b"x")])),
    "dotdot": gz(craft([Entry("../escape", b"x")])),
    "dotdot inside": gz(craft([Entry("exp/../../escape", b"x")])),
    "dot component": gz(craft([Entry("./exp/a", b"x")])),
    "backslash": gz(craft([Entry("exp\\..\\..\\evil", b"x")])),
    "nul in name": gz(craft([Entry("exp/a", b"x", extra={"path": "exp/a\0.sh"})])),
    "empty name": gz(craft([Entry("", b"x")])),
    "not utf-8": gz(craft([Entry("exp/\udcff.txt", b"x")], fmt=tarfile.GNU_FORMAT)),
    "symlink to /etc/passwd": gz(craft([Entry("exp/passwd", type=SYM, linkname="/etc/passwd")])),
    "symlink to ../x": gz(craft([Entry("link", type=SYM, linkname="../x")])),
    "nested symlink leaving": gz(craft([Entry("a/b/link", type=SYM, linkname="../../../x")])),
    "hardlink outside": gz(craft([Entry("h", type=HARD, linkname="../outside")])),
    "hardlink absolute": gz(craft([Entry("h", type=HARD, linkname="/etc/passwd")])),
    "empty link target": gz(craft([Entry("h", type=SYM, linkname="")])),
    "char device": gz(craft([Entry("dev/null", type=tarfile.CHRTYPE)])),
    "block device": gz(craft([Entry("dev/sda", type=tarfile.BLKTYPE)])),
    "fifo": gz(craft([Entry("exp/pipe", type=tarfile.FIFOTYPE)])),
    "unknown type": gz(craft([Entry("exp/odd", type=b"Z")])),
    "duplicate names": gz(craft([Entry("exp/a", b"1"), Entry("exp/a", b"2")])),
    "file then directory": gz(craft([Entry("exp/a", b"1"), Entry("exp/a/b", b"2")])),
    "link as a parent": gz(craft([Entry("exp/d", type=SYM, linkname="sub"), Entry("exp/d/f", b"2")])),
    "path too long": gz(craft([Entry("exp/" + "/".join(["p" * 100] * 11), b"x")])),
    "component too long": gz(craft([Entry("exp/" + "n" * 256, b"x")])),
    "truncated gzip": _valid()[: len(_valid()) // 2],
    "truncated tar": gz(craft([Entry("exp/a", b"x" * 4000)])[:2048]),
    "random bytes": random.Random(7).randbytes(4096),
    "empty input": b"",
    "plain tar, not gzip": craft([Entry("exp/a", b"x")]),
    "gzip of text": gz(b"hello, this is not a tar archive\n" * 40),
    "data after the end": gz(craft([Entry("exp/a", b"x")]) + b"\x01" * 512),
    "pax chain": gz(_pax_chain(50)),
    "oversized pax header": gz(_oversized_pax(200_000)),
    "gnu sparse": gz(craft([Entry("exp/s", type=tarfile.GNUTYPE_SPARSE)], fmt=tarfile.GNU_FORMAT)),
}

TOO_LARGE = {
    "too many files": (gz(craft([Entry(f"exp/f{i}", b"") for i in range(51)])), BundleLimits(max_files=50)),
    "file above limit": (gz(craft([Entry("exp/a", b"x" * 2000)])), BundleLimits(max_file_bytes=1000)),
    "total above limit": (
        gz(craft([Entry(f"exp/f{i}", b"x" * 600) for i in range(5)])),
        BundleLimits(max_total_bytes=2000),
    ),
    "claimed size above limit": (gz(_header_only("exp/huge", 3 * 1024**3)), BundleLimits()),
    "zip bomb": (gz(_zeros_member("exp/zeros.bin", 24 * MiB)), BundleLimits(max_ratio=50.0)),
    "hardlink bomb": (gz(_hardlink_bomb(40)), BundleLimits(max_total_bytes=20 * MiB)),
    "compressed above limit": (_valid(), BundleLimits(max_bytes=100)),
}


def _assert_refused(tmp_path: Path, data: bytes, limits: BundleLimits | None, code: str) -> list[Problem]:
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / "x").write_text("a file next to the destination")
    (tmp_path / "outside").write_text("keep")
    dest = parent / "dest"
    before = snapshot(tmp_path)

    problems = inspect_bundle(data, limits)
    assert problems, "the bundle was accepted"
    assert all(p.field == "bundle" and p.code in CODES and p.message and p.hint for p in problems)
    assert code in {p.code for p in problems}, problems
    with pytest.raises(UnsafeBundle) as raised:
        extract_bundle(data, dest, limits)
    assert raised.value.problems == problems
    assert snapshot(tmp_path) == before
    assert not dest.exists()
    return problems


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_structurally_unsafe_bundles_are_refused(tmp_path: Path, case: str) -> None:
    _assert_refused(tmp_path, UNSAFE[case], None, "bundle_unsafe")


@pytest.mark.parametrize("case", sorted(TOO_LARGE))
def test_bundles_above_a_limit_are_refused(tmp_path: Path, case: str) -> None:
    data, limits = TOO_LARGE[case]
    _assert_refused(tmp_path, data, limits, "bundle_too_large")


def test_twenty_thousand_and_one_files_break_the_default_limit(tmp_path: Path) -> None:
    data = gz(craft([Entry(f"f{i}", b"") for i in range(20_001)], fmt=tarfile.USTAR_FORMAT))
    problems = _assert_refused(tmp_path, data, None, "bundle_too_large")
    assert "20000" in problems[-1].message


def test_problems_name_the_member() -> None:
    problems = inspect_bundle(UNSAFE["symlink to /etc/passwd"])
    assert (
        problems[0].message == 'member "exp/passwd" is a link pointing outside the bundle (to "/etc/passwd")'
    )


def test_every_broken_member_is_reported_at_once() -> None:
    data = gz(
        craft(
            [
                Entry("/abs", b"1"),
                Entry("ok", b"2"),
                Entry("../up", b"3"),
                Entry("dev", type=tarfile.FIFOTYPE),
            ]
        )
    )
    messages = [p.message for p in inspect_bundle(data)]
    assert messages == [
        'member "/abs" is an absolute path',
        'member "../up" has a ".." component',
        'member "dev" is a FIFO',
    ]


def test_reporting_stops_after_a_bounded_number_of_problems() -> None:
    data = gz(craft([Entry(f"../f{i}", b"") for i in range(500)]))
    assert len(inspect_bundle(data)) == 20


def test_a_ratio_below_the_floor_is_fine() -> None:
    # 8 MiB of zeros compresses about 1000 times but stays under the 10 MiB floor.
    assert inspect_bundle(gz(_zeros_member("exp/zeros.bin", 8 * MiB)), BundleLimits(max_ratio=2.0)) == []
