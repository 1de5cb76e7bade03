"""One webhook request: `post` sends a body to a checked target's first address (never resolving its name again),
with a timeout, following no redirect, and answers the receiver's status code or the error in words.

Tier: shared (one outgoing connection; no database).
"""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from .addresses import Target

__all__ = ["Answer", "post"]

_READ_LIMIT = 4096  # of the receiver's answer: enough for an error line, never a large body


@dataclass(frozen=True)
class Answer:
    """What one attempt got: the status code (None when no answer came) or the error."""

    status: int | None
    error: str = ""

    @property
    def delivered(self) -> bool:
        """Return True for a 2xx answer (a redirect is not followed, so it is not a delivery)."""
        return self.status is not None and 200 <= self.status < 300


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to `address`, naming `host` in its request."""

    def __init__(self, address: str, host: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(_PinnedHTTP):
    """An HTTPS connection to `address`, checking the certificate of `host` (and sending it as SNI)."""

    def __init__(self, address: str, host: str, port: int, timeout: float) -> None:
        super().__init__(address, host, port, timeout)
        self._tls = ssl.create_default_context()

    def connect(self) -> None:
        super().connect()
        self.sock = self._tls.wrap_socket(self.sock, server_hostname=self.host)


def post(target: Target, body: bytes, headers: Mapping[str, str], *, timeout: float) -> Answer:
    """POST `body` with `headers` to `target` at its first checked address and return the answer."""
    kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    connection = kind(target.addresses[0], target.host, target.port, timeout)
    try:
        connection.request("POST", target.path, body=body, headers=dict(headers))
        response = connection.getresponse()
        response.read(_READ_LIMIT)
        status = response.status
        if 300 <= status < 400:
            return Answer(status, f"answered a redirect ({status}) to {response.getheader('Location', '?')}: "
                                  "redirects are not followed")
        return Answer(status, "" if 200 <= status < 300 else f"answered {status} {response.reason}")
    except (OSError, http.client.HTTPException) as exc:
        return Answer(None, f"{type(exc).__name__}: {exc}"[:500])
    finally:
        connection.close()
