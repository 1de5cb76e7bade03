"""PEP 440 helpers of the core handshake: parse a version, test a range with pre-releases, explain a miss."""

from __future__ import annotations

import functools

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from starforge import DISTRIBUTION

__all__ = ["UPGRADE_CLIENT", "core_hint", "parse_version", "satisfies", "too_old"]

UPGRADE_CLIENT = "upgrade the sf client"


def parse_version(text: str) -> Version | None:
    """Return the PEP 440 version of `text`, or None when it is not one."""
    try:
        return Version(text.strip())
    except InvalidVersion:
        return None


def satisfies(version: str, requirement: str) -> bool | None:
    """Return whether `version` is inside `requirement` (pre-releases allowed); None when either is invalid."""
    if len(version) + len(requirement) <= _CACHED_TEXT:
        return _satisfies_cached(version, requirement)
    return _satisfies(version, requirement)


_CACHED_TEXT = 256  # every admission asks with the same few short values; parsing them is the cost, so remember them


@functools.lru_cache(maxsize=256)
def _satisfies_cached(version: str, requirement: str) -> bool | None:
    return _satisfies(version, requirement)


def _satisfies(version: str, requirement: str) -> bool | None:
    parsed = parse_version(version)
    try:
        spec = SpecifierSet(requirement.strip())
    except InvalidSpecifier:
        return None
    if parsed is None:
        return None
    return spec.contains(parsed, prereleases=True)


def too_old(version: str, requirement: str) -> bool:
    """Return True when `version` misses `requirement` because of a lower bound (the client must be upgraded)."""
    parsed = parse_version(version)
    try:
        spec = SpecifierSet(requirement.strip())
    except InvalidSpecifier:
        return False
    if parsed is None:
        return False
    for item in spec:
        if item.contains(parsed, prereleases=True):
            continue
        if item.operator in (">=", ">", "~="):
            return True
        target = parse_version(item.version.replace(".*", "")) if item.operator in ("==", "===") else None
        if target is not None and parsed < target:
            return True
    return False


def core_hint(version: str, requirement: str) -> str:
    """Return what to do when `version` misses `requirement`: upgrade an old client, else match the console."""
    if too_old(version, requirement):
        return f"{UPGRADE_CLIENT} (pip install -U {DISTRIBUTION}) to a version within {requirement}"
    return (f"this client ({version}) is newer than the console's catalog: use an sf client within {requirement}, "
            "or ask the console operator to publish a catalog for this version")
