"""The package sources pip is configured with on this machine (its config files and PIP_* variables).

pip reads them itself; uv does not, so builds with uv pass the same find-links, indexes and constraints on its
command line, and both installers see the same packages. The CPU torch policy looks for wheels in the find-links.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["PipConfig", "local_dirs", "read_pip_config"]

_KEYS = ("find-links", "constraint", "index-url", "extra-index-url")
_SECTIONS = (":env:", "install", "global")  # pip's precedence: environment, then [install], then [global]


@dataclass(frozen=True)
class PipConfig:
    """pip's effective find-links, constraint files and indexes (empty when unset)."""

    find_links: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    index_url: str = ""
    extra_index_urls: tuple[str, ...] = ()

    def uv_args(self) -> list[str]:
        """Return the same sources as uv options."""
        args: list[str] = []
        for link in self.find_links:
            args += ["--find-links", link]
        for constraint in self.constraints:
            args += ["--constraint", constraint]
        if self.index_url:
            args += ["--index-url", self.index_url]
        for url in self.extra_index_urls:
            args += ["--extra-index-url", url]
        return args


def _parse(text: str) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        section, dot, option = key.strip().rpartition(".")
        if not sep or not dot or option not in _KEYS:
            continue
        found.setdefault(option, {})[section] = value.strip().strip("'\"")
    return found


def read_pip_config(python: str | None = None) -> PipConfig:
    """Return pip's effective configuration as `python -m pip config list` reports it (empty when pip is absent)."""
    try:
        done = subprocess.run([python or sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return PipConfig()
    found = _parse(done.stdout if done.returncode == 0 else "")

    def value(option: str) -> tuple[str, ...]:
        by_section = found.get(option, {})
        for section in _SECTIONS:
            if section in by_section:
                return tuple(by_section[section].split())
        return ()

    index = value("index-url")
    return PipConfig(value("find-links"), value("constraint"), index[0] if index else "", value("extra-index-url"))


def local_dirs(links: tuple[str, ...]) -> list[Path]:
    """Return the find-links that are folders of this machine (plain paths or file:// URLs)."""
    out = []
    for link in links:
        parsed = urlparse(link)
        path = Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(link) if not parsed.scheme else None
        if path is not None and path.is_dir():
            out.append(path)
    return out
