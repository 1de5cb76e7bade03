"""`Images`: a job's image pulled on a worker thread, once per digest however many jobs wait for it, its progress
in every waiting job's log, kept in the bounded cache (`ImageCache`).

A pull resolves the reference to the digest its registry names now (or takes the digest the job already runs on:
a later attempt never changes image because a tag moved), fetches it by that digest with the operator's access to
that registry, unpacks it, makes it safe and evicts what no job uses once the cache is over its size.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ...contract import image_registry_host, pinned_reference
from ..build_log import BuildLog
from .cache import ImageCache, UnpackedImage, make_safe
from .config import ImageSettings
from .tools import PullError, copy_image, resolve_digest, unpack_layout

__all__ = ["Images", "pull_ahead"]

PREFIX = "[image] "


def _gib(size: int) -> str:
    return f"{size / 1024**3:.2f} GiB" if size >= 1024**3 else f"{size / 1024**2:.1f} MiB"


class Images:
    """The images of one console: its cache, its registries' access and the pull workers."""

    def __init__(self, settings: ImageSettings, *, in_use: Callable[[], set[str]] = set, workers: int = 2) -> None:
        self.settings = settings
        self.cache = ImageCache(settings.cache_dir)
        self._in_use = in_use
        self._inflight: dict[str, tuple[Future[UnpackedImage], BuildLog]] = {}
        self._pulling: set[str] = set()  # digests being pulled now (never evicted under a pull)
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="starforge-image")

    def ready(self, reference: str, digest: str) -> UnpackedImage | None:
        """Return the cached image of `digest` (the digest a job already runs on), or None."""
        image = self.cache.get(digest) if digest else None
        if image is not None:
            self.cache.touch(digest)
        return image

    def prepare(self, reference: str, log_file: Path, digest: str = "") -> Future[UnpackedImage]:
        """Pull `reference` (at `digest` when given) on a worker thread, joining a pull of it already under way,
        with its progress in `log_file`."""
        key = f"{reference}@{digest}" if digest else reference
        with self._lock:
            inflight = self._inflight.get(key)
            if inflight is None:
                log = BuildLog(PREFIX, f"this job waits for its image {reference}")
                future = self._pool.submit(self._run, key, reference, digest, log)
                inflight = self._inflight[key] = (future, log)
            inflight[1].attach(log_file)
            return inflight[0]

    def _run(self, key: str, reference: str, digest: str, log: BuildLog) -> UnpackedImage:
        try:
            return self.pull(reference, digest, log)
        except Exception as exc:
            log(f"the pull failed: {exc}")
            raise
        finally:
            with self._lock:
                self._inflight.pop(key, None)

    def pull(self, reference: str, digest: str = "", log: Callable[[str], None] = lambda _line: None
             ) -> UnpackedImage:
        """Return the image `reference` names (at `digest` when given), pulling and unpacking it when not cached."""
        access = self.settings.access(image_registry_host(reference))
        timeout = self.settings.pull_timeout
        if not digest:
            log(f"resolving {reference}")
            digest = resolve_digest(reference, access, timeout=timeout)
        cached = self.ready(reference, digest)
        if cached is not None:
            log(f"{reference} is {digest}, already in the image cache")
            return cached
        with self._lock:
            self._pulling.add(digest)
        try:
            with self.cache.pulling(digest) as scratch:
                cached = self.ready(reference, digest)  # another console sharing the cache pulled it meanwhile
                if cached is not None:
                    return cached
                pinned = pinned_reference(reference, digest)
                log(f"pulling {pinned}")
                copy_image(pinned, scratch / "layout", access, timeout=timeout, log=log)
                log("unpacking")
                unpack_layout(scratch / "layout", scratch / "bundle", timeout=timeout)
                size = make_safe(scratch / "bundle" / "rootfs")
                if size > self.settings.max_bytes:
                    raise PullError(f"the image is {_gib(size)} unpacked, more than the image cache holds "
                                    f"({_gib(self.settings.max_bytes)}, images.max_bytes)")
                image = self.cache.commit(scratch / "bundle", digest, reference, size)
                log(f"{reference} is {digest} ({_gib(size)} unpacked)")
        finally:
            with self._lock:
                self._pulling.discard(digest)
        self.evict(keep=digest, log=log)
        return image

    def evict(self, keep: str = "", log: Callable[[str], None] = lambda _line: None) -> list[str]:
        """Evict least recently used images beyond the cache's size, never one a job uses or a pull holds."""
        with self._lock:
            busy = {*self._pulling, keep}
        removed = self.cache.evict(self.settings.max_bytes, {*busy, *self._in_use()})
        for digest in removed:
            log(f"evicted {digest} from the image cache (least recently used)")
        return removed

    def shutdown(self) -> None:
        """Stop taking pulls; pulls under way finish in the background."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def pull_ahead(settings: ImageSettings, reference: str, log: Callable[[str], None] = lambda _line: None
               ) -> UnpackedImage:
    """Pull `reference` into the image cache before any job names it (`sf console image pull`), evicting nothing:
    only a console knows which images its jobs use, and it evicts on its own next pull."""
    cache = ImageCache(settings.cache_dir)
    images = Images(settings, in_use=lambda: {image.digest for image in cache.entries()}, workers=1)
    try:
        return images.pull(reference, log=log)
    finally:
        images.shutdown()
