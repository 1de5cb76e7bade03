"""The device-code login (wire-protocol §4.3) and the `device` parameter describing this machine (§4.5)."""

from __future__ import annotations

import base64
import getpass
import hashlib
import json
import os
import platform
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from starforge import __version__

from ._config import Credentials, normalise_server
from ._detail import detail_text
from ._errors import AuthError
from ._http import Http
from ._models import DeviceCode

__all__ = ["device_param", "poll_device_login", "start_device_login"]

_SLOW_DOWN_STEP = 5.0
_MAX_INTERVAL = 60.0


def _machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            text = Path(path).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text:
            return text
    return socket.gethostname()


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def device_param() -> str:
    """Return base64url (unpadded) of the compact JSON that describes this machine and client."""
    info = {
        "hostname": socket.gethostname(),
        "os": platform.system(),
        "os_release": platform.release(),
        "machine": platform.machine(),
        "platform": platform.platform(),
        "user": _user(),
        "terminal": os.environ.get("TERM_PROGRAM") or os.environ.get("TERM") or "",
        "shell": os.path.basename(os.environ.get("SHELL") or ""),
        "cli_version": __version__,
        "source": "forge-cli",
        "device_id": hashlib.sha256(_machine_id().encode("utf-8")).hexdigest()[:16],
    }
    raw = json.dumps(info, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def start_device_login(server: str, *, transport: httpx.BaseTransport | None = None) -> DeviceCode:
    """Ask the console for a device code; anything but HTTP 200 with both codes raises `AuthError`."""
    server = normalise_server(server)
    http = Http(server, transport=transport)
    try:
        response = http.send("POST", "/api/cli/device/code", json_body={"device": device_param()},
                             read_timeout=http.timeouts.auth)
    finally:
        http.close()
    if response.status_code != 200:
        raise AuthError(f"the console refused to start a login\n{detail_text(response.content, response.status_code)}",
                        status=response.status_code)
    code = DeviceCode.from_body(server, http.object_of(response))
    if not code.device_code or not code.user_code:
        raise AuthError("the console's device-code answer lacks device_code or user_code", status=200)
    return code


def poll_device_login(
    server: str,
    code: DeviceCode,
    *,
    transport: httpx.BaseTransport | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], float] = time.time,
) -> Credentials:
    """Wait for the code to be approved and return the credentials; raise `AuthError` when refused or expired.

    Sleeps `interval` before every poll; `authorization_pending` keeps polling; `slow_down` or 429 adds 5 s
    (at most 60 s); any other answer aborts with its detail.
    """
    server = normalise_server(server)
    http = Http(server, transport=transport)
    interval = float(code.interval)
    deadline = clock() + float(code.expires_in)
    try:
        while clock() + interval <= deadline:
            sleep(interval)
            response = http.send("POST", "/api/cli/device/token", json_body={"device_code": code.device_code},
                                 read_timeout=http.timeouts.auth)
            if response.status_code == 200:
                body = http.object_of(response)
                if not isinstance(body.get("access_token"), str) or not body["access_token"]:
                    raise AuthError("the console approved the login but sent no access token", status=200)
                return Credentials.from_token_response(body, now())
            detail = detail_text(response.content, response.status_code)
            if detail == "authorization_pending":
                continue
            if detail == "slow_down" or response.status_code == 429:
                interval = min(interval + _SLOW_DOWN_STEP, _MAX_INTERVAL)
                continue
            raise AuthError(f"the login was not completed: {detail}", status=response.status_code,
                            hint="run `sf login` to start again")
    finally:
        http.close()
    raise AuthError("the login code expired before it was approved", hint="run `sf login` to start again")
