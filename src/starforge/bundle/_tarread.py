"""A strict streaming tar reader for hostile input: linear-time header parsing, bounded metadata, no seeking.

We read tar ourselves instead of through `tarfile` so that every byte is pulled through the caller's metered
`read`, malformed or truncated archives are errors rather than a silent early end, and extended headers are
parsed in linear time with a size bound (CPython's pax parsing is quadratic on crafted input before 3.11.10).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ._problems import show

__all__ = ["Member", "TarFormatError", "TarReader"]

BLOCK = 512
CHUNK = 1024 * 1024
# Extended headers (pax records, GNU long names) only carry names and small fields.
MAX_META_BYTES = 64 * 1024
# Metadata headers allowed in a row before a real member (pax global + pax + GNU long name + long link, …).
MAX_META_CHAIN = 8

_KINDS = {
    b"0": "file",
    b"\x00": "file",
    b"7": "file",
    b"1": "hardlink",
    b"2": "symlink",
    b"3": "chardev",
    b"4": "blockdev",
    b"5": "dir",
    b"6": "fifo",
}
_META_KIND = {
    b"x": "a pax header",
    b"g": "a pax global header",
    b"L": "a GNU long name",
    b"K": "a GNU long link",
}
_SIGNED = struct.Struct("148b8x356b")


class TarFormatError(Exception):
    """Raised when the stream is not a well-formed tar archive (bad header, truncation, trailing data)."""


@dataclass(frozen=True, slots=True)
class Member:
    """One archive member: name, kind (file, dir, symlink, hardlink, chardev, blockdev, fifo, other), data size."""

    name: str
    kind: str
    type_flag: str
    size: int
    mode: int
    linkname: str
    sparse: bool


def _cstr(field: bytes) -> bytes:
    end = field.find(b"\x00")
    return field if end < 0 else field[:end]


def _decode(raw: bytes) -> str:
    # Invalid UTF-8 survives as surrogates, which the path rules then refuse.
    return raw.decode("utf-8", "surrogateescape")


def _number(field: bytes, what: str) -> int:
    if field and field[0] & 0x80:
        if field[0] == 0xFF:
            raise TarFormatError(f"negative {what} in a header")
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    text = field.strip(b" \x00")
    if not text:
        return 0
    if text.strip(b"01234567"):
        raise TarFormatError(f"bad {what} field in a header")
    return int(text, 8)


def _check_checksum(block: bytes) -> None:
    stored = _number(block[148:156], "checksum")
    unsigned = sum(block[:148]) + 8 * 0x20 + sum(block[156:])
    signed = sum(_SIGNED.unpack(block)) + 8 * 0x20
    if stored not in (unsigned, signed):
        raise TarFormatError("bad header checksum")


def _pax_records(buf: bytes) -> dict[str, str]:
    records: dict[str, str] = {}
    pos = 0
    while pos < len(buf):
        space = buf.find(b" ", pos, pos + 12)
        digits = buf[pos:space] if space > pos else b""
        if not digits.isdigit():
            raise TarFormatError("malformed pax record")
        length = int(digits)
        end = pos + length
        if end > len(buf) or end <= space + 1 or buf[end - 1 : end] != b"\n":
            raise TarFormatError("malformed pax record")
        key, equals, value = buf[space + 1 : end - 1].partition(b"=")
        if not equals:
            raise TarFormatError("malformed pax record")
        records[_decode(key)] = _decode(value)
        pos = end
    return records


@dataclass(slots=True)
class _Pending:
    """Overrides that extended headers set for the next real member."""

    name: str | None = None
    linkname: str | None = None
    size: int | None = None
    sparse: bool = False
    chain: int = 0


class TarReader:
    """Read members one by one from `read` (a function returning up to n bytes, b"" at the end)."""

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read
        self._data_left = 0
        self._pad_left = 0
        self._started = False
        self._done = False

    @property
    def started(self) -> bool:
        """Return True once a valid header was read: the stream is a tar archive, whatever follows."""
        return self._started

    def _exact(self, n: int, what: str) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < n:
            chunk = self._read(min(n - got, CHUNK))
            if not chunk:
                raise TarFormatError(f"the archive ends in the middle of {what} (truncated)")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def _skip(self, n: int, what: str) -> None:
        while n > 0:
            n -= len(self._exact(min(n, CHUNK), what))

    def chunks(self) -> Iterator[bytes]:
        """Yield the current member's remaining data in chunks of at most 1 MiB."""
        while self._data_left > 0:
            chunk = self._exact(min(self._data_left, CHUNK), "a member's data")
            self._data_left -= len(chunk)
            yield chunk

    def _finish_member(self) -> None:
        self._skip(self._data_left, "a member's data")
        self._data_left = 0
        self._skip(self._pad_left, "a member's padding")
        self._pad_left = 0

    def _meta_data(self, size: int, kind: str) -> bytes:
        if size > MAX_META_BYTES:
            raise TarFormatError(f"{kind} of {size} bytes is larger than the {MAX_META_BYTES}-byte limit")
        data = self._exact(size, kind)
        self._skip(-size % BLOCK, kind)
        return data

    def _drain_trailer(self) -> None:
        while chunk := self._read(CHUNK):
            if chunk.count(0) != len(chunk):
                raise TarFormatError("data follows the end-of-archive marker")

    def next(self) -> Member | None:
        """Return the next member (skipping unread data of the previous one), or None at the end."""
        if self._done:
            return None
        self._finish_member()
        pending = _Pending()
        while True:
            block = self._read_header()
            if block is None:
                return None
            type_flag = block[156:157]
            size = _number(block[124:136], "size")
            if type_flag in _META_KIND:
                pending.chain += 1
                if pending.chain > MAX_META_CHAIN:
                    raise TarFormatError(f"more than {MAX_META_CHAIN} extended headers in a row")
                self._apply_meta(type_flag, self._meta_data(size, _META_KIND[type_flag]), pending)
                continue
            return self._member(block, type_flag, size, pending)

    def _read_header(self) -> bytes | None:
        first = self._read(BLOCK)
        if not first and not self._started:
            raise TarFormatError("the archive is empty")
        block = first if len(first) == BLOCK else first + self._exact(BLOCK - len(first), "a header")
        if block.count(0) == BLOCK:
            self._done = True
            self._drain_trailer()
            return None
        _check_checksum(block)
        self._started = True
        return block

    def _apply_meta(self, type_flag: bytes, data: bytes, pending: _Pending) -> None:
        if type_flag == b"L":
            pending.name = _decode(_cstr(data))
            return
        if type_flag == b"K":
            pending.linkname = _decode(_cstr(data))
            return
        records = _pax_records(data)
        if any(key.startswith("GNU.sparse.") for key in records):
            pending.sparse = True
        member_keys = {"path", "linkpath", "size"}.intersection(records)
        if type_flag == b"g":
            if member_keys:
                raise TarFormatError("a pax global header sets " + ", ".join(sorted(member_keys)))
            return
        if "path" in records:
            pending.name = records["path"]
        if "linkpath" in records:
            pending.linkname = records["linkpath"]
        if "size" in records:
            if not records["size"].isdigit():
                raise TarFormatError("malformed pax size record")
            pending.size = int(records["size"])

    def _member(self, block: bytes, type_flag: bytes, size: int, pending: _Pending) -> Member:
        name_raw = _cstr(block[0:100])
        if block[257:263] == b"ustar\x00":
            prefix = _cstr(block[345:500])
            if prefix:
                name_raw = prefix + b"/" + name_raw
        name = pending.name if pending.name is not None else _decode(name_raw)
        linkname = pending.linkname if pending.linkname is not None else _decode(_cstr(block[157:257]))
        if pending.size is not None:
            size = pending.size
        if type_flag == b"S":
            raise TarFormatError(f"member {show(name)} is a GNU sparse file")
        kind = _KINDS.get(type_flag, "other")
        if kind == "file" and type_flag == b"\x00" and name.endswith("/"):
            kind = "dir"
        if kind == "dir":
            name = name.rstrip("/") or name
        # Only regular files and unknown types carry data, as in POSIX tar readers.
        if kind not in ("file", "other"):
            size = 0
        self._data_left = size
        self._pad_left = -size % BLOCK
        return Member(
            name=name,
            kind=kind,
            type_flag=_decode(type_flag),
            size=size,
            mode=_number(block[100:108], "mode"),
            linkname=linkname,
            sparse=pending.sparse,
        )
