"""The programs that fetch and unpack images: `skopeo` (resolve a tag to its digest, copy an image by digest into
an OCI layout) and `umoci` (unpack a layout into a root filesystem). Each failure is a `PullError` carrying the
registry's own words."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from .config import RegistryAccess

__all__ = ["PullError", "ToolMissing", "copy_image", "resolve_digest", "unpack_layout"]

_TAG = "image"  # the single tag of a layout this module writes
_SAID = 6  # lines of a tool's error kept in the reason


class PullError(RuntimeError):
    """An image could not be fetched or unpacked; the text is the reason its job fails with."""


class ToolMissing(PullError):
    """skopeo or umoci is not installed on the console's machine."""


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ToolMissing(f"{name} is not installed on the console's machine, so images cannot be pulled; an "
                          f"operator installs it (Debian/Ubuntu: apt-get install {name})")
    return found


def _access_args(access: RegistryAccess, side: str) -> list[str]:
    args = [f"--{side}tls-verify={'true' if access.tls_verify else 'false'}"]
    if access.auth_file is not None:
        args.append(f"--{side}authfile={access.auth_file}")
    else:  # never a credential of the console's user: only what the operator configured for this registry
        args.append(f"--{side}no-creds" if side else "--no-creds")
    return args


_LOGFMT = re.compile(r'^time="[^"]*"\s+level=\w+\s+msg="(?P<msg>(?:[^"\\]|\\.)*)"')


def _said(stderr: str) -> str:
    """Return the tool's last words: the message of a `time=… level=… msg="…"` line, else the line itself."""
    lines = []
    for line in (raw.strip() for raw in stderr.strip().splitlines()):
        found = _LOGFMT.match(line)
        if found:
            line = found.group("msg").replace('\\"', '"')
        if line:
            lines.append(line)
    return " / ".join(lines[-_SAID:]) or "no reason given"


def _env() -> dict[str, str]:
    # no user's registry configuration or credentials: a private HOME, and the system's policy only
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "LANG": "C.UTF-8"}


def resolve_digest(reference: str, access: RegistryAccess, *, timeout: float) -> str:
    """Return the manifest digest `reference` names now (`sha256:…`), asked of its registry."""
    argv = [_tool("skopeo"), "inspect", "--format", "{{.Digest}}", *_access_args(access, ""),
            f"docker://{reference}"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=_env(), check=False)
    except subprocess.TimeoutExpired as exc:
        raise PullError(f"the registry did not answer within {timeout:g} s") from exc
    digest = done.stdout.strip()
    if done.returncode != 0 or not digest.startswith("sha256:"):
        raise PullError(_said(done.stderr or done.stdout))
    return digest


def copy_image(pinned: str, layout: Path, access: RegistryAccess, *, timeout: float,
               log: Callable[[str], None]) -> None:
    """Copy the image `pinned` (`host/repo@sha256:…`) into the OCI layout folder `layout`, its progress to `log`."""
    # skopeo prints one line per blob when its output is not a terminal
    argv = [_tool("skopeo"), "copy", *_access_args(access, "src-"), f"docker://{pinned}", f"oci:{layout}:{_TAG}"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()) as child:
        assert child.stdout is not None and child.stderr is not None
        try:
            for line in child.stdout:
                if line.strip():
                    log(line.rstrip())
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            child.kill()
            raise PullError(f"the pull took longer than {timeout:g} s (images.pull_timeout)") from exc
        stderr = child.stderr.read()
    if child.returncode != 0:
        raise PullError(_said(stderr))


def unpack_layout(layout: Path, bundle: Path, *, timeout: float) -> None:
    """Unpack the layout's image into `bundle` (`bundle/rootfs` and the image's `config.json`)."""
    argv = [_tool("umoci"), "unpack", *([] if os.getuid() == 0 else ["--rootless"]), "--image",
            f"{layout}:{_TAG}", str(bundle)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=_env(), check=False)
    except subprocess.TimeoutExpired as exc:
        raise PullError(f"unpacking the image took longer than {timeout:g} s") from exc
    if done.returncode != 0:
        raise PullError(f"the image cannot be unpacked: {_said(done.stderr or done.stdout)}")
