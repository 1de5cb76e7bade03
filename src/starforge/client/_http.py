"""The HTTP seam: one request per connection, the §1 headers and timeouts, JSON objects in, errors out."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx

from ._config import Timeouts
from ._errors import ConsoleError, Unavailable, error_from_response

__all__ = ["Http", "query"]

# The transport rules (wire-protocol §1): no keep-alive, no compression, no client version in any header.
_HEADERS = {
    "Connection": "close",
    "Accept-Encoding": "identity",
    "User-Agent": f"Python-urllib/{sys.version_info.major}.{sys.version_info.minor}",
}


def query(**params: str | int | float | bool | None) -> str:
    """Return `?k=v&…` with every value percent-encoded, booleans as true/false, None values left out."""
    parts = []
    for key, value in params.items():
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        parts.append(f"{key}={quote(text, safe='')}")
    return "?" + "&".join(parts) if parts else ""


class Http:
    """Send requests to one console: `base` + path, bearer when given, every non-2xx raised as a `ConsoleError`."""

    def __init__(
        self, server: str, *, transport: httpx.BaseTransport | None = None, timeouts: Timeouts | None = None
    ) -> None:
        self.base = server.rstrip("/")
        self.timeouts = timeouts or Timeouts.from_env()
        self._client = httpx.Client(transport=transport, headers=_HEADERS, trust_env=True)

    def close(self) -> None:
        """Close the underlying connection pool."""
        self._client.close()

    def timeout(self, read: float | None) -> httpx.Timeout:
        """Return an httpx timeout with the configured connect time and `read` (None waits forever)."""
        return httpx.Timeout(connect=self.timeouts.connect, read=read, write=read, pool=self.timeouts.connect)

    def _headers(self, token: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = dict(extra or {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def send(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json_body: Any = None,
        content: bytes | Iterator[bytes] | None = None,
        headers: Mapping[str, str] | None = None,
        read_timeout: float | None = None,
    ) -> httpx.Response:
        """Send one request and return the response whatever its status; network failures raise `Unavailable`."""
        all_headers = self._headers(token, headers)
        if json_body is not None:
            content = json.dumps(json_body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            all_headers["Content-Type"] = "application/json"
        elif content is None and method == "POST":
            content = b""
        read = self.timeouts.read if read_timeout is None else read_timeout
        with self._network_errors(read):
            return self._client.request(
                method,
                self.base + path,
                content=content,
                headers=all_headers,
                timeout=self.timeout(read),
                follow_redirects=method == "GET",
            )

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """Send one request and return the JSON object of a 2xx answer; raise the mapped error otherwise."""
        response = self.send(method, path, **kwargs)
        return self.object_of(response)

    def object_of(self, response: httpx.Response) -> dict[str, Any]:
        """Return the JSON object of a 2xx response (`{}` when empty); raise the mapped error otherwise."""
        if not response.is_success:
            raise error_from_response(response.status_code, response.content)
        body = response.content
        if not body.strip():
            return {}
        try:
            value = json.loads(body.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError):
            value = None
        if not isinstance(value, dict):
            raise ConsoleError(
                f"the console answered {response.request.url.path} with something that is not a JSON object",
                status=response.status_code,
                hint="check that the server URL points at a StarForge console",
            )
        return value

    @contextmanager
    def stream(self, path: str, *, token: str | None, headers: Mapping[str, str] | None = None,
               method: str = "GET", json_body: Any = None) -> Iterator[httpx.Response]:
        """Open a streaming request (a GET unless `method`; `json_body` sent as JSON) with no read timeout; the
        caller reads the status and the body."""
        all_headers = self._headers(token, headers)
        content = None
        if json_body is not None:
            content = json.dumps(json_body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            all_headers["Content-Type"] = "application/json"
        with self._network_errors(None), self._client.stream(
            method, self.base + path, headers=all_headers, content=content, timeout=self.timeout(None)
        ) as response:
            yield response

    @contextmanager
    def _network_errors(self, read: float | None) -> Iterator[None]:
        try:
            yield
        except httpx.TimeoutException as exc:
            raise Unavailable(
                f"the console at {self.base} did not answer in time ({type(exc).__name__}, read timeout {read} s)",
                hint="raise FORGE_HTTP_TIMEOUT if the console is slow",
            ) from exc
        except httpx.TransportError as exc:
            raise Unavailable(
                f"cannot reach the console at {self.base}: {exc or type(exc).__name__}",
                hint="check the address (`sf login --server URL`) and that the console is running",
            ) from exc
