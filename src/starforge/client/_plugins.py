"""A plugin folder packed for `POST /api/plugins/publish`, and the check that the console stored what was sent.

The package holds exactly the files `starforge.bundle.directory_digest` covers, byte for byte (no line-ending
conversion), so the console's digest of the unpacked package must equal the folder's own; a different answer means
the console stored something else, and publishing is reported as failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..bundle import BundleFile, digest_files, directory_digest, pack_bytes
from ._errors import ConsoleError

__all__ = ["PackedPlugin", "check_digest", "pack_plugin"]


@dataclass(frozen=True)
class PackedPlugin:
    """A plugin folder as a gzip tar, with the folder's directory digest and how many files it holds."""

    data: bytes
    digest: str
    files: int


def pack_plugin(root: Path) -> PackedPlugin:
    """Pack the plugin folder `root` (every file its digest covers) and compute its digest."""
    root = Path(root)
    if not root.is_dir():
        raise ConsoleError(f"{root} is not a folder", hint="publish a plugin folder holding plugin.yaml")
    files = [BundleFile(rel, path) for rel, path in digest_files(root)]
    try:
        data, info = pack_bytes(files, crlf_to_lf=False)
    except (OSError, ValueError) as exc:
        raise ConsoleError(f"{root} could not be packed: {exc}", hint="rename or remove that file") from exc
    return PackedPlugin(data, directory_digest(root), info.files)


def check_digest(packed: PackedPlugin, answer: dict[str, object]) -> None:
    """Raise ConsoleError when the console's `digest` differs from the folder's own."""
    stored = str(answer.get("digest") or "")
    if stored != packed.digest:
        raise ConsoleError(f"the console stored {answer.get('id', 'the plugin')}@{answer.get('version', '?')} with "
                           f"digest {stored or '(none)'}, but this folder's digest is {packed.digest}",
                           hint="the published version does not match your folder: check it with "
                                "`sf plugin show`, and publish the folder again under a new version")
