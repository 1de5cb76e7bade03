"""`Console.publish_plugin` through httpx's transport seam: the package holds exactly the files the directory digest
covers, byte for byte, and an answer whose digest is not the folder's own is refused."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pytest

from starforge.bundle import BundleLimits, directory_digest, extract_bundle
from starforge.client import Console, ConsoleError

URL = "http://console.test"


def _folder(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "plugin.yaml").write_text("name: opsd\nversion: 1.0.0\n", encoding="utf-8")
    (root / "pkg" / "run.sh").write_bytes(b"echo hi\r\n")  # a CRLF shell script stays CRLF: the digest reads bytes
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    return root


def _console(tmp_path: Path, digest: str | None) -> tuple[Console, list[Path]]:
    """A console answering like ours: unpack the package and report its digest (or `digest` when given)."""
    unpacked: list[Path] = []

    def handler(request: httpx.Request) -> httpx.Response:
        target = tmp_path / f"server-{len(unpacked)}"
        extract_bundle(io.BytesIO(request.read()), target, BundleLimits(), skip_prefixes=())
        unpacked.append(target)
        return httpx.Response(200, json={"id": "alice/opsd", "version": "1.0.0", "kind": "plugin",
                                         "digest": digest or directory_digest(target), "size_bytes": 1})

    return Console(URL, token="t", transport=httpx.MockTransport(handler)), unpacked


def test_the_package_is_what_the_digest_covers(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "plugin")
    console, unpacked = _console(tmp_path, None)
    answer = console.publish_plugin(folder)
    assert answer["digest"] == directory_digest(folder)
    names = sorted(p.relative_to(unpacked[0]).as_posix() for p in unpacked[0].rglob("*") if p.is_file())
    assert names == ["pkg/run.sh", "plugin.yaml"]
    assert (unpacked[0] / "pkg" / "run.sh").read_bytes() == b"echo hi\r\n"


def test_an_answer_with_another_digest_is_refused(tmp_path: Path) -> None:
    console, _ = _console(tmp_path, "sha256:" + "0" * 64)
    with pytest.raises(ConsoleError, match="this folder's digest is sha256:") as caught:
        console.publish_plugin(_folder(tmp_path / "plugin"))
    assert "new version" in caught.value.hint


def test_a_missing_folder_sends_nothing(tmp_path: Path) -> None:
    console, unpacked = _console(tmp_path, None)
    with pytest.raises(ConsoleError, match="is not a folder"):
        console.publish_plugin(tmp_path / "nothing")
    assert unpacked == []
