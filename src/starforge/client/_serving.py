"""`Serving`: the inference services of one console (`/api/services`): start, list, extend and stop them, manage
their API keys, and chat with one through the console's OpenAI-compatible proxy (streamed, no openai package)."""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from ._errors import ConsoleError, Unavailable, error_from_response
from ._http import Http, query
from ._sse import SSEParser

__all__ = ["READY", "SERVICE_TERMINAL", "Serving", "chat_deltas", "proxy_url"]

READY = "ready"
SERVICE_TERMINAL = frozenset({"stopped", "failed"})
_WAIT_HINT = "`sf serve start … --wait` waits until a service answers"


def _refusal(status: int, body: bytes, service_id: str) -> ConsoleError:
    """The error of a refused proxied request: a 503 is the service starting (never the console's maintenance)."""
    if status == 503:
        return Unavailable(error_from_response(500, body).detail, status=503,
                           hint=f"follow its start with `sf job logs {service_id}`; {_WAIT_HINT}")
    return error_from_response(status, body)


def _segment(ref: str) -> str:
    return quote(ref, safe="")


def proxy_url(server: str, service_id: str) -> str:
    """Return the OpenAI base URL of service `service_id` on console `server` (`<server>/api/services/<id>/v1`)."""
    return f"{server.rstrip('/')}/api/services/{_segment(service_id)}/v1"


def chat_deltas(chunks: Iterator[bytes]) -> Iterator[str]:
    """Yield the text of each `choices[0].delta.content` of an OpenAI chat-completion SSE stream, until `[DONE]`;
    an `error` object in the stream raises `ConsoleError` with its message."""
    parser = SSEParser()
    for chunk in chunks:
        for event in parser.feed(chunk):
            data = event.data.strip()
            if data == "[DONE]":
                return
            try:
                value = json.loads(data)
            except ValueError:
                continue
            if not isinstance(value, dict):
                continue
            error = value.get("error")
            if error:
                message = error.get("message") if isinstance(error, dict) else error
                raise ConsoleError(f"the service failed to answer: {message}", hint="see the service's job log "
                                                                                    "with `sf job logs ID`")
            for choice in value.get("choices") or ():
                delta = choice.get("delta") if isinstance(choice, dict) else None
                text = delta.get("content") if isinstance(delta, dict) else None
                if isinstance(text, str) and text:
                    yield text


class Serving:
    """The caller's inference services on one console (reached as `Console.serving`).

    http: the console's HTTP seam; bearer: returns the token of each request (refreshed by `Console`).
    """

    def __init__(self, http: Http, bearer: Callable[[], str]) -> None:
        self._http = http
        self._bearer = bearer

    def _call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        return self._http.request(method, path, token=self._bearer(), json_body=body)

    def start(self, model: str, *, gpus: int = 0, ttl_hours: float | None = None, profile: str = "",
              name: str = "") -> dict[str, Any]:
        """Start a service of `model` (`run:<run_id>`, `owner/name@version`, a path under the console's model roots
        or a hub id) and return it queued: `{id, name, model, status, gpus, expires_at, url, run_id, …}`. Raises
        `Rejected` with problems at `model`, `gpus` or `ttl_hours` (nothing started)."""
        body: dict[str, Any] = {"model": model, "gpus": int(gpus)}
        if ttl_hours is not None:
            body["ttl_hours"] = float(ttl_hours)
        if profile:
            body["profile"] = profile
        if name:
            body["name"] = name
        return self._call("POST", "/api/services", body)

    def list(self, *, all: bool = False) -> list[dict[str, Any]]:
        """Return your services, newest first (`all`: stopped and failed ones too)."""
        rows = self._call("GET", "/api/services" + query(all=True if all else None)).get("services")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def get(self, service_id: str) -> dict[str, Any]:
        """Return service `service_id`; one that is not yours raises `NotFound`."""
        return self._call("GET", f"/api/services/{_segment(service_id)}")

    def extend(self, service_id: str, hours: float | None = None) -> dict[str, Any]:
        """Move the service's expiry `hours` later (the console's default TTL when None; never beyond the operator's
        cap) and return it."""
        body = {} if hours is None else {"hours": hours}
        return self._call("POST", f"/api/services/{_segment(service_id)}/extend", body)

    def stop(self, service_id: str) -> dict[str, Any]:
        """Stop the service (its job is stopped, its keys stop working) and return it."""
        return self._call("POST", f"/api/services/{_segment(service_id)}/stop")

    def add_key(self, service_id: str, name: str = "") -> dict[str, Any]:
        """Create an API key of the service for a tool: `{id, name, prefix, key, created_at}`; `key` (`sfk-…`) is
        the secret, shown this once."""
        return self._call("POST", f"/api/services/{_segment(service_id)}/keys", {"name": name})

    def keys(self, service_id: str) -> builtins.list[dict[str, Any]]:
        """Return the service's keys as metadata: `[{id, name, prefix, created_at, revoked_at}]`."""
        rows = self._call("GET", f"/api/services/{_segment(service_id)}/keys").get("keys")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def revoke_key(self, service_id: str, key_id: int | str) -> dict[str, Any]:
        """Revoke one key of the service (refused from its next request on): `{id, revoked_at}`."""
        return self._call("DELETE", f"/api/services/{_segment(service_id)}/keys/{_segment(str(key_id))}")

    def url(self, service_id: str) -> str:
        """Return the OpenAI base URL of the service (give it to an OpenAI client with your token or a key)."""
        return proxy_url(self._http.base, service_id)

    def chat(self, service_id: str, messages: Sequence[Mapping[str, Any]] | str, *, model: str = "",
             max_tokens: int | None = None, **options: Any) -> Iterator[str]:
        """Yield the answer of the service to `messages` (a list of `{role, content}`, or one user message) token by
        token, streamed through the console's proxy. `model` defaults to the service's own model. A service that
        is not ready yet raises `Unavailable` (503), one that is not yours `NotFound`."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        body: dict[str, Any] = {"model": model or self.model_of(service_id), "messages": [dict(m) for m in messages],
                                "stream": True, **options}
        if max_tokens is not None:
            body["max_tokens"] = int(max_tokens)
        path = f"/api/services/{_segment(service_id)}/v1/chat/completions"
        with self._http.stream(path, token=self._bearer(), method="POST", json_body=body,
                               headers={"Accept": "text/event-stream"}) as response:
            if not response.is_success:
                response.read()
                raise _refusal(response.status_code, response.content, service_id)
            yield from chat_deltas(response.iter_bytes())

    def model_of(self, service_id: str) -> str:
        """Return the model id the service's server pins (the first of its `/v1/models`), else its reference."""
        response = self._http.send("GET", f"/api/services/{_segment(service_id)}/v1/models", token=self._bearer())
        if response.status_code == 503 or response.status_code in (401, 404):
            raise _refusal(response.status_code, response.content, service_id)
        listed = None
        if response.is_success:
            try:
                listed = json.loads(response.content).get("data")
            except (ValueError, AttributeError):
                listed = None
        if isinstance(listed, list):
            for entry in listed:
                if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"]:
                    return str(entry["id"])
        service = self.get(service_id)
        return str(service.get("model_path") or service.get("model") or "")
