"""Hostile job bundles built by hand with tarfile and zlib: escapes, links, devices, a gzip bomb, too many files."""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CONFIG", "MiB", "Member", "gzip_bomb", "hostile_bundles", "tar_gz"]

CONFIG = "experiments/toy/config.yaml"
MiB = 1024 * 1024


@dataclass(frozen=True)
class Member:
    """One tar member as a hostile client would write it: any name, any type, any link target."""

    name: str
    data: bytes = b""
    type: bytes = tarfile.REGTYPE
    linkname: str = ""
    device: tuple[int, int] = (0, 0)


def tar_gz(members: list[Member], *, with_config: bool = True) -> bytes:
    """Return a gzip tar of `members` (after a legitimate config file), names written exactly as given."""
    buffer = io.BytesIO()
    head = [Member(CONFIG, b"grpo:\n  max_num_steps: 5\n")] if with_config else []
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member in head + members:
            info = tarfile.TarInfo(member.name)
            info.type = member.type
            info.linkname = member.linkname
            info.mode = 0o644
            info.devmajor, info.devminor = member.device
            if member.type == tarfile.REGTYPE:
                info.size = len(member.data)
                tar.addfile(info, io.BytesIO(member.data))
            else:
                tar.addfile(info)
    return gzip.compress(buffer.getvalue(), mtime=0)


def gzip_bomb(expanded: int, name: str = "experiments/toy/zeros.bin") -> bytes:
    """Return a valid gzip tar holding one file of `expanded` zero bytes, about 1000 times smaller on the wire.

    The same 1 MiB of zeros is deflated once after a full flush (which resets the dictionary), so its compressed
    block can be repeated; the gzip header and trailer (CRC-32, size) are written by hand.
    """
    assert expanded % MiB == 0
    info = tarfile.TarInfo(name)
    info.size = expanded
    header = info.tobuf(tarfile.PAX_FORMAT)
    zeros = bytes(MiB)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(header) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    again = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert again == block, "a full flush should make the compressed block repeatable"
    end = bytes(1024)  # two zero blocks close the tar
    last = deflate.compress(end) + deflate.flush()
    crc = zlib.crc32(header)
    for _ in range(expanded // MiB):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(end, crc)
    size = len(header) + expanded + len(end)
    trailer = crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little")
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + first + block * (expanded // MiB) + last + trailer


def hostile_bundles(escape: Path, *, max_files: int) -> dict[str, bytes]:
    """Return the hostile bundles by case name; every escape aims into the (empty) directory `escape`."""
    climb = "../" * 40 + escape.relative_to("/").as_posix()
    sym, hard = tarfile.SYMTYPE, tarfile.LNKTYPE
    return {
        "dotdot to an absolute place": tar_gz([Member(f"{climb}/dotdot", b"pwned")]),
        "dotdot inside the experiment": tar_gz([Member("experiments/toy/../../../../x", b"pwned")]),
        "absolute path": tar_gz([Member(str(escape / "absolute"), b"pwned")]),
        "symlink out, then a file through it": tar_gz([
            Member("experiments/toy/out", type=sym, linkname=str(escape)),
            Member("experiments/toy/out/through-symlink", b"pwned"),
        ]),
        "relative symlink climbing out": tar_gz([Member("experiments/toy/up", type=sym, linkname="../../../../..")]),
        "hardlink to /etc/passwd": tar_gz([Member("experiments/toy/passwd", type=hard, linkname="/etc/passwd")]),
        "hardlink climbing out": tar_gz([Member("experiments/toy/h", type=hard, linkname=f"{climb}/hardlinked")]),
        "character device": tar_gz([Member("experiments/toy/null", type=tarfile.CHRTYPE, device=(1, 3))]),
        "block device": tar_gz([Member("experiments/toy/sda", type=tarfile.BLKTYPE, device=(8, 0))]),
        "fifo": tar_gz([Member("experiments/toy/pipe", type=tarfile.FIFOTYPE)]),
        "gzip bomb (1 GiB of zeros)": gzip_bomb(1024 * MiB),
        "too many files": tar_gz([Member(f"experiments/toy/f{i:05d}") for i in range(max_files + 1)]),
    }
