"""Properties: no input makes inspection raise, extraction never escapes, and our tar reader agrees with tarfile."""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from starforge.bundle import BundleLimits, UnsafeBundle, extract_bundle, inspect_bundle
from starforge.bundle._tarread import TarFormatError, TarReader
from starforge.contract import CODES

from .craft import Entry, craft, gz, snapshot

SMALL = BundleLimits(max_files=200, max_file_bytes=1 << 20, max_total_bytes=4 << 20)

SEED_TAR = craft(
    [
        Entry("exp", type=tarfile.DIRTYPE, mode=0o755),
        Entry("exp/config.yaml", b"a: 1\n" * 40),
        Entry("exp/" + "long" * 40 + "/é.txt", b"unicode and long"),
        Entry("exp/run.sh", b"#!/bin/sh\n", mode=0o755),
        Entry("exp/link", type=tarfile.SYMTYPE, linkname="run.sh"),
        Entry("exp/hard", type=tarfile.LNKTYPE, linkname="exp/config.yaml"),
        Entry("common/empty", b""),
    ]
)
with tarfile.open(fileobj=io.BytesIO(SEED_TAR)) as _seed:
    # Where each member's first header (a pax header, if any) and its own header start.
    HEADERS = sorted(
        {m.offset for m in _seed.getmembers()} | {m.offset_data - 512 for m in _seed.getmembers()}
    )


def _fix_checksum(raw: bytearray, at: int) -> None:
    raw[at + 148 : at + 156] = b" " * 8
    raw[at + 148 : at + 156] = b"%06o\0 " % sum(raw[at : at + 512])


@st.composite
def mutated_tars(draw: st.DrawFn) -> bytes:
    raw = bytearray(SEED_TAR)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["header", "header", "byte", "cut", "insert"]))
        if action == "header" and len(raw) >= HEADERS[-1] + 512:
            at = draw(st.sampled_from(HEADERS))
            offset = draw(st.sampled_from([0, 1, 99, 100, 124, 130, 135, 156, 157, 257, 345, 400]))
            raw[at + offset] = draw(st.integers(0, 255))
            _fix_checksum(raw, at)
        elif action == "byte" and raw:
            raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
        elif action == "cut":
            raw = raw[: draw(st.integers(0, len(raw)))]
        else:
            at = draw(st.integers(0, len(raw)))
            raw[at:at] = draw(st.binary(max_size=600))
    return bytes(raw)


def _assert_clean(problems: list[object]) -> None:
    for problem in problems:
        assert getattr(problem, "field", None) == "bundle"
        assert getattr(problem, "code", None) in CODES


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048))
def test_random_bytes_give_problems_never_exceptions(data: bytes) -> None:
    problems = inspect_bundle(data, SMALL)
    assert problems
    _assert_clean(list(problems))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600) | st.binary(min_size=512, max_size=4096))  # short bodies, and whole header blocks
@example(bytes(512)).via("an end-of-archive block: an empty archive")
@example(bytes(1536)).via("zero blocks only")
@example(bytes(512) + b"x").via("data after the end-of-archive block")
@example(bytes(511)).via("a truncated block")
@example(b"\x01" * 512).via("a block of garbage")
@example(b"").via("nothing at all")
def test_random_tar_bodies_give_problems_never_exceptions(body: bytes) -> None:
    problems = list(inspect_bundle(gz(body), SMALL))
    _assert_clean(problems)
    # Random bytes are never a tar archive (a header's checksum would have to match), except zero blocks only:
    # an empty archive, the one body without a problem.
    empty_archive = len(body) >= 512 and not body.strip(b"\0")
    assert (problems == []) == empty_archive, (body[:64], problems)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_tars())
def test_mutated_bundles_never_raise_and_never_escape(raw: bytes) -> None:
    data = gz(raw)
    problems = inspect_bundle(data, SMALL)
    _assert_clean(list(problems))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "sibling").write_text("keep")
        dest = root / "a" / "dest"
        try:
            extract_bundle(data, dest, SMALL)
        except UnsafeBundle as refused:
            assert refused.problems == problems
            assert not dest.exists()
        else:
            assert problems == []
            assert not any(p.is_symlink() for p in dest.rglob("*"))
        outside = {k: v for k, v in snapshot(root).items() if k != "a" and not k.startswith("a/")}
        assert outside == {"sibling": b"keep"}


names = st.lists(
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\0/"), min_size=1, max_size=12),
    min_size=1,
    max_size=4,
).map("/".join)


@st.composite
def archives(draw: st.DrawFn) -> tuple[bytes, int]:
    fmt = draw(st.sampled_from([tarfile.PAX_FORMAT, tarfile.GNU_FORMAT]))
    entries = []
    for name in draw(st.lists(names, max_size=6)):
        kind = draw(st.sampled_from(["file", "dir", "sym", "hard", "fifo"]))
        if kind == "file":
            entries.append(
                Entry(name, draw(st.binary(max_size=1500)), mode=draw(st.sampled_from([0o644, 0o755])))
            )
        elif kind == "dir":
            entries.append(Entry(name, type=tarfile.DIRTYPE))
        elif kind == "fifo":
            entries.append(Entry(name, type=tarfile.FIFOTYPE))
        else:
            entries.append(
                Entry(name, type=tarfile.SYMTYPE if kind == "sym" else tarfile.LNKTYPE, linkname=draw(names))
            )
    return craft(entries, fmt=fmt), fmt


@settings(max_examples=200, deadline=None)
@given(archives())
def test_our_reader_agrees_with_tarfile(archive: tuple[bytes, int]) -> None:
    raw, _ = archive
    expected = []
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        for info in tar.getmembers():
            handle = tar.extractfile(info) if info.isreg() else None
            expected.append(
                (info.name, info.type.decode(), info.linkname, info.mode, handle.read() if handle else b"")
            )
    stream = io.BytesIO(raw)
    reader = TarReader(stream.read)
    seen = []
    try:
        while (member := reader.next()) is not None:
            data = b"".join(reader.chunks()) if member.kind == "file" else b""
            seen.append((member.name, member.type_flag, member.linkname, member.mode, data))
    except TarFormatError as error:  # pragma: no cover - a failure message, not a path
        raise AssertionError(f"well-formed archive refused: {error}") from error
    assert seen == expected
