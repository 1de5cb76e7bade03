"""Member paths: the rules a bundle member name must follow, and where a link member points."""

from __future__ import annotations

import posixpath

__all__ = ["MAX_SEGMENT_BYTES", "link_target", "path_problem"]

# The longest file name (one path segment) common filesystems accept.
MAX_SEGMENT_BYTES = 255


def path_problem(path: str, max_len: int) -> str | None:
    """Return why `path` is not a safe relative POSIX path of at most `max_len` characters, or None."""
    if not path:
        return "has an empty name"
    if "\x00" in path:
        return "has a NUL character in its name"
    if "\\" in path:
        return "has a backslash in its name"
    if path.startswith("/"):
        return "is an absolute path"
    segments = path.split("/")
    if ".." in segments:
        return 'has a ".." component'
    if any(segment in ("", ".") for segment in segments):
        return 'has an empty or "." component'
    try:
        encoded = [segment.encode("utf-8") for segment in segments]
    except UnicodeEncodeError:
        return "has a name that is not valid UTF-8"
    if len(path) > max_len:
        return f"has a path longer than {max_len} characters ({len(path)})"
    if any(len(segment) > MAX_SEGMENT_BYTES for segment in encoded):
        return f"has a path component longer than {MAX_SEGMENT_BYTES} bytes"
    return None


def link_target(name: str, linkname: str, *, hard: bool) -> str | None:
    """Return the bundle path a link member points to, or None when it leaves the bundle.

    A hard link names a member from the bundle root; a symbolic link is relative to its own directory.
    The result may name nothing in the bundle (or the root itself, as "."); callers decide what to do then.
    """
    if not linkname or linkname.startswith("/") or "\x00" in linkname:
        return None
    base = "" if hard else posixpath.dirname(name)
    target = posixpath.normpath(posixpath.join(base, linkname))
    if target == ".." or target.startswith("../") or target.startswith("/"):
        return None
    return target
