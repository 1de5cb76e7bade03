"""The image cache: unpacked images made safe, kept per digest, evicted least recently used but never in use, and
one pull per image however many jobs wait for it."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

from starforge.engines.build_log import BuildLog
from starforge.engines.images import (
    ImageCache,
    Images,
    ImageSettings,
    UnpackedImage,
    make_safe,
    pinned_reference,
)


def _bundle(folder: Path, size: int = 1000, env: tuple[str, ...] = ("PATH=/usr/bin:/bin",)) -> Path:
    """Write what `umoci unpack` leaves: a rootfs and the runtime config naming the image's environment."""
    (folder / "rootfs" / "etc").mkdir(parents=True)
    (folder / "rootfs" / "data").write_bytes(b"x" * size)
    (folder / "config.json").write_text(json.dumps({"process": {"env": list(env), "cwd": "/work"}}))
    return folder


def test_an_unpacked_image_loses_device_nodes_fifos_and_set_id_bits(tmp_path: Path) -> None:
    root = tmp_path / "rootfs"
    (root / "usr" / "bin").mkdir(parents=True)
    tool = root / "usr" / "bin" / "su"
    tool.write_bytes(b"#!/bin/sh\n")
    tool.chmod(0o4755 | stat.S_ISGID)
    os.mkfifo(root / "pipe")
    (root / "etc").mkdir()
    (root / "etc" / "resolv.conf").symlink_to("/run/systemd/resolve/stub-resolv.conf")
    if os.getuid() == 0:
        os.mknod(root / "disk", 0o666 | stat.S_IFBLK, os.makedev(8, 0))
    size = make_safe(root)
    assert stat.S_IMODE(tool.stat().st_mode) == 0o755  # set-uid and set-gid cleared, the rest kept
    assert not (root / "pipe").exists() and not (root / "disk").exists()
    resolv = root / "etc" / "resolv.conf"
    assert resolv.is_file() and not resolv.is_symlink()  # the job's resolver is bound over a plain file
    assert size >= len(b"#!/bin/sh\n")


def test_a_committed_image_is_found_by_its_digest_with_its_environment(tmp_path: Path) -> None:
    cache = ImageCache(tmp_path / "images")
    with cache.pulling("sha256:aa") as scratch:
        image = cache.commit(_bundle(scratch / "bundle"), "sha256:aa", "r.io/team/img:1", 1000)
    assert image == cache.get("sha256:aa")
    assert image.root.is_dir() and (image.root / "data").stat().st_size == 1000
    assert image.env_value("PATH") == "/usr/bin:/bin" and image.cwd == "/work"
    assert image.pinned == "r.io/team/img@sha256:aa"
    assert pinned_reference("r.io/team/img:1", "sha256:aa") == "r.io/team/img@sha256:aa"
    assert pinned_reference("ubuntu:22.04", "sha256:bb") == "ubuntu@sha256:bb"
    assert not list((tmp_path / "images" / "tmp").iterdir())  # nothing half-written is left behind


def test_eviction_removes_the_least_recently_used_images_but_never_one_in_use(tmp_path: Path) -> None:
    cache = ImageCache(tmp_path / "images")
    for index, digest in enumerate(("sha256:old", "sha256:used", "sha256:new")):
        with cache.pulling(digest) as scratch:
            cache.commit(_bundle(scratch / "bundle"), digest, f"r.io/i:{index}", 1000)
        stamp = time.time() - 100 + index * 10
        os.utime(tmp_path / "images" / digest.replace(":", "-") / "used", (stamp, stamp))
    assert cache.size() == 3000
    removed = cache.evict(1500, in_use={"sha256:old"})
    assert removed == ["sha256:used", "sha256:new"]  # oldest first, skipping the one a job runs in
    assert cache.get("sha256:old") is not None and cache.size() == 1000


class _SlowImages(Images):
    """Images whose pull waits for a gate and counts how often it ran (no registry needed)."""

    def __init__(self, settings: ImageSettings) -> None:
        super().__init__(settings)
        self.gate = threading.Event()
        self.pulls = 0

    def pull(self, reference: str, digest: str = "", log: Callable[[str], None] = lambda _l: None) -> UnpackedImage:
        self.pulls += 1
        log(f"pulling {reference}")
        self.gate.wait(10)
        return UnpackedImage("sha256:cc", reference, Path("/nonexistent"), 1)


def test_jobs_waiting_for_one_image_join_one_pull_and_each_log_tells_its_progress(tmp_path: Path) -> None:
    images = _SlowImages(ImageSettings(cache_dir=tmp_path / "images"))
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    one = images.prepare("r.io/team/img:1", first)
    two = images.prepare("r.io/team/img:1", second)
    images.gate.set()
    assert one is two and one.result(timeout=10).digest == "sha256:cc" and images.pulls == 1
    for log in (first, second):
        assert "[image] pulling r.io/team/img:1" in log.read_text()
    images.shutdown()


def test_a_build_log_gives_late_joiners_everything_said_so_far(tmp_path: Path) -> None:
    log = BuildLog("[image] ", "waiting")
    early, late = tmp_path / "early.log", tmp_path / "late.log"
    log.attach(early)
    log("one")
    log.attach(late)
    log("two")
    assert early.read_text() == "[image] waiting\n[image] one\n[image] two\n"
    assert late.read_text() == "[image] one\n[image] two\n"


def test_a_tool_s_refusal_is_reported_in_its_own_words() -> None:
    from starforge.engines.images.tools import _said

    logged = ('time="2026-12-03T06:10:27Z" level=fatal msg="reading manifest nope in r/x: manifest unknown: '
              'name \\"r/x\\" unknown"\n')
    assert _said(logged) == 'reading manifest nope in r/x: manifest unknown: name "r/x" unknown'
    assert _said("first\n\nsecond\n") == "first / second" and _said("") == "no reason given"
