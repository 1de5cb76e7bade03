"""`IngestClient`: the one HTTP client of the job-side ingest endpoints (wire-protocol §11), on urllib."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from starforge.contract import INGEST_ENDPOINT_VARIABLE, INGEST_TOKEN_VARIABLE
from starforge.wire import (
    ARTIFACT_KINDS,
    LIFECYCLE_EVENTS,
    PATH_ARTIFACT,
    PATH_CONTROL,
    PATH_HPARAMS,
    PATH_LIFECYCLE,
    PATH_LOGS,
    PATH_METRICS,
)

__all__ = [
    "INGEST_ENABLED",
    "INGEST_VARIABLES",
    "IngestClient",
    "IngestError",
    "IngestRefused",
    "IngestUnavailable",
    "client_from_environ",
    "utc_timestamp",
]

# what `spec_to_env` (section 7) gives a job: the switch, then endpoint, run id and token, all needed to send
INGEST_ENABLED = "STARFORGE_ENABLED"
INGEST_VARIABLES = (INGEST_ENDPOINT_VARIABLE, "STARFORGE_RUN_ID", INGEST_TOKEN_VARIABLE)

_TIMEOUT = 10.0
_BACKOFF = (0.5, 1.0)  # sleeps between the three attempts
_DETAIL_LIMIT = 240


class IngestError(Exception):
    """Base of the ingest errors: the call did not succeed.

    IngestError               the call did not succeed
    ├── IngestRefused         a 4xx other than 429: the console refused the call; never retried
    └── IngestUnavailable     5xx, 429 or a network error on every attempt
    """

    def __init__(self, status: int | None, detail: str) -> None:
        self.status = status
        self.detail = detail
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.detail}" if self.status is not None else self.detail

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, detail={self.detail!r})"


class IngestRefused(IngestError):
    """Raised at once when the console answers a 4xx other than 429 (bad token, bad body, unknown run)."""


class IngestUnavailable(IngestError):
    """Raised when every attempt met a 5xx, a 429 or a network error."""


def utc_timestamp() -> str:
    """Return the current time as ISO-8601 UTC with milliseconds, e.g. `2025-01-31T12:00:00.123Z`."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class IngestClient:
    """Posts JSON to `{endpoint}/<path>` for one run, with the run-scoped token.

    `endpoint` is `STARFORGE_ENDPOINT` (trailing `/` ignored), `run_id` goes into every body, and `token` is sent
    as `X-StarForge-Token`. `timeout` is per attempt; `backoff` lists the sleeps between attempts, so its length
    plus one is the number of attempts.
    """

    def __init__(
        self,
        endpoint: str,
        run_id: str,
        token: str,
        *,
        timeout: float = _TIMEOUT,
        backoff: Sequence[float] = _BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.run_id = run_id
        self._token = token
        self._timeout = timeout
        self._backoff = tuple(backoff)
        self._sleep = sleep
        self._opener = urllib.request.build_opener()

    def __repr__(self) -> str:
        return f"IngestClient(endpoint={self.endpoint!r}, run_id={self.run_id!r}, token='***')"

    def post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Return the JSON object the console answered to `POST {endpoint}/{path}`; raise an `IngestError`."""
        payload = {"run_id": self.run_id, **{k: v for k, v in body.items() if k != "run_id"}}
        data = json.dumps(payload, ensure_ascii=False, allow_nan=False, default=str).encode("utf-8")
        url = f"{self.endpoint}/{path.lstrip('/')}"
        last: IngestUnavailable | None = None
        for attempt in range(len(self._backoff) + 1):
            if attempt:
                self._sleep(self._backoff[attempt - 1])
            try:
                return self._send(url, data)
            except IngestUnavailable as exc:
                last = exc
        assert last is not None
        raise last

    def lifecycle(self, event: str, **extra: Any) -> dict[str, Any]:
        """Report a lifecycle `event` (`starting`, `running`, `succeeded`, `failed`) with a UTC `ts`."""
        if event not in LIFECYCLE_EVENTS:
            raise ValueError(f"unknown lifecycle event {event!r}; expected one of {sorted(LIFECYCLE_EVENTS)}")
        return self.post(PATH_LIFECYCLE, {"event": event, "ts": utc_timestamp(), **extra})

    def logs(self, chunks: Iterable[str], eof: bool = False) -> dict[str, Any]:
        """Append text `chunks` (not necessarily line-aligned) to the run's log stream."""
        return self.post(PATH_LOGS, {"chunks": list(chunks), "eof": eof})

    def metrics(self, points: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Store metric points `{key, step, value, ts}`."""
        return self.post(PATH_METRICS, {"points": [dict(p) for p in points]})

    def hparams(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Store the run's hyperparameters for the config panel."""
        return self.post(PATH_HPARAMS, {"params": dict(params)})

    def artifact(self, kind: str, path: str, **fields: Any) -> dict[str, Any]:
        """Register an artifact of `kind` at `path`; `fields`: `format`, `step`, `size_bytes`, `metrics` (None omitted)."""
        if kind not in ARTIFACT_KINDS:
            raise ValueError(f"unknown artifact kind {kind!r}; expected one of {sorted(ARTIFACT_KINDS)}")
        extra = {key: value for key, value in fields.items() if value is not None}
        return self.post(PATH_ARTIFACT, {"kind": kind, "path": path, **extra})

    def control(self) -> dict[str, Any]:
        """Ask what the console wants of the running job: `{"action": "" | "checkpoint", "reason", "deadline"}`."""
        return self.post(PATH_CONTROL, {})

    def _send(self, url: str, data: bytes) -> dict[str, Any]:
        request = urllib.request.Request(
            url,
            data=data,
            method="POST",
            headers={"Content-Type": "application/json", "X-StarForge-Token": self._token},
        )
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                return _json_object(response.read())
        except urllib.error.HTTPError as exc:
            status = exc.code
            detail = _detail(_read_quietly(exc))
            if status >= 500 or status == 429:
                raise IngestUnavailable(status, detail) from None
            raise IngestRefused(status, detail) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            # ValueError: http.client rejects a malformed status line or header (a broken proxy, not our input).
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise IngestUnavailable(None, f"cannot reach {url}: {reason}") from None


def client_from_environ(environ: Mapping[str, str]) -> tuple[IngestClient | None, list[str]]:
    """Return the client the environment configures, or None and the missing variables (none: ingest is off)."""
    if environ.get(INGEST_ENABLED, "") != "1":
        return None, []
    missing = [name for name in INGEST_VARIABLES if not environ.get(name)]
    if missing:
        return None, missing
    endpoint, run_id, token = (environ[name] for name in INGEST_VARIABLES)
    return IngestClient(endpoint, run_id, token), []


def _read_quietly(exc: urllib.error.HTTPError) -> bytes:
    try:
        return exc.read()
    except OSError:
        return b""


def _json_object(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _detail(raw: bytes) -> str:
    """Return the error text the way wire-protocol §9.1 reads it: `detail`, else the raw body (240 characters)."""
    try:
        body = json.loads(raw) if raw.strip() else None
    except ValueError:
        body = None
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str) and detail.strip():
        return detail.strip()
    if isinstance(detail, list) and detail:
        first = detail[0]
        if isinstance(first, dict) and "msg" in first:
            return str(first["msg"])
        return str(first)
    text = raw.decode("utf-8", errors="replace").strip()
    return text[:_DETAIL_LIMIT] or "(empty response)"
