"""The image cache: one read-only root filesystem per image digest, shared by every job, bounded in size.

    <cache_dir>/sha256-<hex>/rootfs        the unpacked image, made safe (no device nodes, no set-id bits)
    <cache_dir>/sha256-<hex>/image.json    its reference, digest, size, environment and working directory
    <cache_dir>/sha256-<hex>/used          touched whenever a job starts on it (least recently used go first)
    <cache_dir>/locks/sha256-<hex>          a pull of that digest holds it (processes sharing the cache join)
    <cache_dir>/tmp/                        pulls under way (renamed into place when whole)

Eviction removes the least recently used images until the cache fits `max_bytes`, never one in use.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...contract import pinned_reference

__all__ = ["ImageCache", "UnpackedImage", "make_safe"]

_META = "image.json"
_USED = "used"


@dataclass(frozen=True)
class UnpackedImage:
    """An image in the cache: its digest, the reference it was pulled as, its root and what its config says."""

    digest: str
    reference: str
    root: Path
    size: int
    env: tuple[str, ...] = ()  # KEY=VALUE lines of the image's config
    cwd: str = "/"

    @property
    def pinned(self) -> str:
        """Return the reference pinned to its digest (`host/repo@sha256:…`)."""
        return pinned_reference(self.reference, self.digest)

    def env_value(self, key: str) -> str:
        """Return the image's value of environment variable `key` ("" when it sets none)."""
        return next((line.split("=", 1)[1] for line in self.env if line.startswith(f"{key}=")), "")


def _entry_name(digest: str) -> str:
    return digest.replace(":", "-")


def make_safe(root: Path) -> int:
    """Remove device nodes, FIFOs and sockets from an unpacked root, clear set-uid/set-gid bits, give it a plain
    `/etc/resolv.conf` (the job's resolver is bound over it) and return its size in bytes."""
    size = 0
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) or stat.S_ISFIFO(info.st_mode) \
                    or stat.S_ISSOCK(info.st_mode):
                os.unlink(path)
                continue
            if not stat.S_ISLNK(info.st_mode):
                if info.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    os.chmod(path, stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
                size += info.st_size
    etc = root / "etc"
    if etc.is_symlink() or not etc.is_dir():
        with contextlib.suppress(FileNotFoundError):
            etc.unlink()
        etc.mkdir(mode=0o755)
    resolv = etc / "resolv.conf"
    if resolv.is_symlink() or not resolv.is_file():
        with contextlib.suppress(FileNotFoundError):
            resolv.unlink() if not resolv.is_dir() or resolv.is_symlink() else shutil.rmtree(resolv)
        resolv.write_text("")
        resolv.chmod(0o644)
    return size


class ImageCache:
    """The unpacked images of one cache folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _folder(self, digest: str) -> Path:
        return self.root / _entry_name(digest)

    def get(self, digest: str) -> UnpackedImage | None:
        """Return the cached image of `digest`, or None."""
        folder = self._folder(digest)
        try:
            meta = json.loads((folder / _META).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return UnpackedImage(digest, str(meta.get("reference", "")), folder / "rootfs", int(meta.get("size", 0)),
                             tuple(meta.get("env", ())), str(meta.get("cwd", "/")))

    def touch(self, digest: str) -> None:
        """Mark the image of `digest` as just used."""
        with contextlib.suppress(OSError):
            (self._folder(digest) / _USED).touch()

    @contextlib.contextmanager
    def pulling(self, digest: str) -> Iterator[Path]:
        """Hold the pull lock of `digest` (waiting for another process's pull) and yield a fresh scratch folder."""
        (self.root / "locks").mkdir(parents=True, exist_ok=True, mode=0o700)
        (self.root / "tmp").mkdir(exist_ok=True, mode=0o700)
        self.root.chmod(0o700)  # rootfs folders are shown to jobs by bind mounts only: nobody browses the cache
        with open(self.root / "locks" / _entry_name(digest), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            scratch = self.root / "tmp" / f"{_entry_name(digest)}.{os.getpid()}.{time.monotonic_ns()}"
            scratch.mkdir(mode=0o700)
            try:
                yield scratch
            finally:
                shutil.rmtree(scratch, ignore_errors=True)

    def commit(self, scratch_bundle: Path, digest: str, reference: str, size: int) -> UnpackedImage:
        """Move an unpacked bundle (`rootfs/`, `config.json`) into the cache as the image of `digest`."""
        config: dict[str, object] = {}
        with contextlib.suppress(OSError, ValueError):
            config = json.loads((scratch_bundle / "config.json").read_text(encoding="utf-8"))
        process = config.get("process") if isinstance(config.get("process"), dict) else {}
        assert isinstance(process, dict)
        env = [str(v) for v in process.get("env", []) if isinstance(v, str) and "=" in v]
        meta = {"reference": reference, "digest": digest, "size": size, "env": env,
                "cwd": str(process.get("cwd") or "/"), "pulled_at": time.time()}
        final = self._folder(digest)
        staged = scratch_bundle.parent / "entry"
        staged.mkdir(mode=0o700)
        (scratch_bundle / "rootfs").rename(staged / "rootfs")
        (staged / "rootfs").chmod(0o755)
        (staged / _META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        (staged / _USED).touch()
        staged.chmod(0o755)
        if final.exists():
            shutil.rmtree(final)
        staged.rename(final)
        image = self.get(digest)
        assert image is not None
        return image

    def entries(self) -> list[UnpackedImage]:
        """Return every cached image."""
        out = []
        for folder in sorted(self.root.glob("sha256-*")):
            image = self.get(folder.name.replace("-", ":", 1))
            if image is not None:
                out.append(image)
        return out

    def size(self) -> int:
        """Return the unpacked size of every cached image, in bytes."""
        return sum(image.size for image in self.entries())

    def evict(self, max_bytes: int, in_use: set[str]) -> list[str]:
        """Remove least recently used images not in `in_use` until the cache holds at most `max_bytes`; return the
        removed digests."""
        entries = self.entries()
        total = sum(image.size for image in entries)

        def used(image: UnpackedImage) -> float:
            try:
                return (self._folder(image.digest) / _USED).stat().st_mtime
            except OSError:
                return 0.0

        removed: list[str] = []
        for image in sorted(entries, key=used):
            if total <= max_bytes:
                break
            if image.digest in in_use:
                continue
            (self.root / "locks").mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(self.root / "locks" / _entry_name(image.digest), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # never under a pull of the same digest
                shutil.rmtree(self._folder(image.digest), ignore_errors=True)
            total -= image.size
            removed.append(image.digest)
        return removed
