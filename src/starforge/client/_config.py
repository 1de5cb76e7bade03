"""Client state under $FORGE_HOME: `config.json` (the server) and `credentials.json` (tokens per server).

This is the client's settings module: the only place that reads FORGE_SERVER and the HTTP timeouts from the
environment. The folder itself comes from `starforge.home.forge_home`, the one reader of FORGE_HOME.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starforge.home import forge_home

from ._errors import ConfigError

__all__ = ["Credentials", "ForgeHome", "Timeouts", "normalise_server"]

_NO_SERVER = "no console configured: run `sf login --server URL`"


def normalise_server(url: str) -> str:
    """Return `url` trimmed and without trailing `/`; refuse anything that is not an http(s) URL."""
    text = url.strip().rstrip("/")
    if not text.startswith(("http://", "https://")) or len(text.split("://", 1)[1]) == 0:
        raise ConfigError(
            f"{url!r} is not a console URL",
            hint="give the full address, e.g. `sf login --server http://127.0.0.1:8000`",
        )
    return text


@dataclass(frozen=True)
class Credentials:
    """One stored login: tokens, the epoch second the access token stops being used (None: never), the user."""

    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None
    user: dict[str, Any] | None = None

    def expired(self, now: float) -> bool:
        """Return True when the access token must be refreshed before the next call."""
        return self.expires_at is not None and self.expires_at <= now

    @property
    def username(self) -> str:
        """Return the stored user's name, or an empty string."""
        return str((self.user or {}).get("username") or "")

    def to_dict(self) -> dict[str, Any]:
        """Return the `credentials.json` entry form."""
        return {
            "access_token": self.access_token,
            "refresh_token": self.refresh_token,
            "expires_at": self.expires_at,
            "user": self.user,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Credentials | None:
        """Read a `credentials.json` entry; return None when it has no usable access token."""
        if not isinstance(data, dict) or not isinstance(data.get("access_token"), str) or not data["access_token"]:
            return None
        refresh = data.get("refresh_token")
        expires = data.get("expires_at")
        user = data.get("user")
        return cls(
            access_token=data["access_token"],
            refresh_token=refresh if isinstance(refresh, str) and refresh else None,
            expires_at=float(expires) if isinstance(expires, int | float) and not isinstance(expires, bool) else None,
            user=user if isinstance(user, dict) else None,
        )

    @classmethod
    def from_token_response(cls, body: Mapping[str, Any], now: float, previous: Credentials | None = None) -> Credentials:
        """Build credentials from a token answer: `expires_at = now + expires_in − 60`; keep what it omits."""
        expires_in = body.get("expires_in")
        if not isinstance(expires_in, int | float) or isinstance(expires_in, bool):
            expires_in = 3600
        refresh = body.get("refresh_token")
        user = body.get("user")
        return cls(
            access_token=str(body["access_token"]),
            refresh_token=refresh if isinstance(refresh, str) and refresh else (previous.refresh_token if previous else None),
            expires_at=now + float(expires_in) - 60,
            user=user if isinstance(user, dict) else (previous.user if previous else None),
        )


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"{name}={raw!r} is not a positive number of seconds", hint=f"unset {name} or fix it")
    return value


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Connect and read timeouts in seconds (wire-protocol §1); the environment overrides connect and ordinary reads."""

    connect: float = 5.0
    read: float = 15.0
    auth: float = 10.0
    version: float = 5.0
    submit: float = 300.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Timeouts:
        """Read FORGE_HTTP_CONNECT_TIMEOUT and FORGE_HTTP_TIMEOUT; refuse values that are not positive numbers."""
        env = os.environ if env is None else env
        return cls(
            connect=_seconds(env, "FORGE_HTTP_CONNECT_TIMEOUT", 5.0),
            read=_seconds(env, "FORGE_HTTP_TIMEOUT", 15.0),
        )


class ForgeHome:
    """The client state directory: read with UTF-8 (BOM allowed), written atomically with mode 0600 in a 0700 dir."""

    CONFIG = "config.json"
    CREDENTIALS = "credentials.json"

    def __init__(self, path: Path | str, env: Mapping[str, str] | None = None) -> None:
        self.path = Path(path).expanduser()
        self._env = os.environ if env is None else env

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ForgeHome:
        """Return the state folder of `starforge.home.forge_home` ($FORGE_HOME, or `~/.forge` when it is unset)."""
        env = os.environ if env is None else env
        return cls(forge_home(env), env)

    @property
    def config_file(self) -> Path:
        """Return the path of `config.json`."""
        return self.path / self.CONFIG

    @property
    def credentials_file(self) -> Path:
        """Return the path of `credentials.json`."""
        return self.path / self.CREDENTIALS

    # reading
    def _read(self, file: Path) -> dict[str, Any]:
        try:
            text = file.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {file}: {exc}", hint=f"fix or delete {file}") from exc
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{file} is not valid JSON ({exc})", hint=f"fix or delete {file}") from exc
        if not isinstance(value, dict):
            raise ConfigError(f"{file} is not valid: expected a JSON object", hint=f"fix or delete {file}")
        return value

    def configured_server(self) -> str | None:
        """Return the server saved in `config.json`, or None."""
        server = self._read(self.config_file).get("server")
        return normalise_server(server) if isinstance(server, str) and server.strip() else None

    def resolve_server(self, flag: str | None = None) -> str:
        """Return the console URL: `flag` (`--server`) > FORGE_SERVER > `config.json`; raise when none is set."""
        for candidate in (flag, self._env.get("FORGE_SERVER")):
            if candidate and candidate.strip():
                return normalise_server(candidate)
        server = self.configured_server()
        if server is None:
            raise ConfigError(_NO_SERVER)
        return server

    def credentials(self, server: str) -> Credentials | None:
        """Return the credentials stored for `server`, or None."""
        return Credentials.from_dict(self._read(self.credentials_file).get(normalise_server(server)))

    # writing
    def save_server(self, server: str) -> None:
        """Record `server` as the configured console in `config.json`."""
        config = self._read(self.config_file)
        config["server"] = normalise_server(server)
        self._write(self.config_file, config)

    def save_credentials(self, server: str, credentials: Credentials) -> None:
        """Store `credentials` under `server`, leaving other consoles' entries untouched."""
        entries = self._read(self.credentials_file)
        entries[normalise_server(server)] = credentials.to_dict()
        self._write(self.credentials_file, entries)

    def forget(self, server: str) -> Credentials | None:
        """Delete the entry of `server` and return it (None when there was none)."""
        entries = self._read(self.credentials_file)
        key = normalise_server(server)
        if key not in entries:
            return None
        removed = Credentials.from_dict(entries.pop(key))
        self._write(self.credentials_file, entries)
        return removed

    def _ensure_dir(self) -> None:
        if not self.path.is_dir():
            self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.path, 0o700)

    def _write(self, file: Path, value: dict[str, Any]) -> None:
        self._ensure_dir()
        data = (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        fd, tmp = tempfile.mkstemp(prefix=f".{file.name}.", dir=self.path)  # mkstemp creates it with mode 0600
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, file)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
