"""The signing secret of a hook: derived from the console's notify key (`<state>/notify.key`, 32 random bytes,
mode 0600, made on first use) and the hook's salt; the secret itself is stored nowhere, so the database alone
signs nothing.

Tier: shared (the state folder's key file; no database).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from ....wire.webhook_signature import SECRET_PREFIX

__all__ = ["KEY_FILE", "new_salt", "secret_of"]

KEY_FILE = "notify.key"
_KEY_BYTES = 32


def _console_key(state_dir: Path) -> bytes:
    path = state_dir / KEY_FILE
    if not path.exists():  # written whole under another name, then linked: a reader never sees half a key
        draft = state_dir / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, secrets.token_bytes(_KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            with contextlib.suppress(FileExistsError):  # another process made it first: theirs is the key
                os.link(draft, path)
        finally:
            draft.unlink()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        key = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != _KEY_BYTES:
        raise RuntimeError(f"{path} does not hold a {_KEY_BYTES}-byte key")
    return key


def new_salt() -> str:
    """Return a fresh salt for a new hook."""
    return secrets.token_hex(16)


def secret_of(state_dir: Path, salt: str) -> str:
    """Return the signing secret (`whsec_…`) of the hook with `salt` on the console of `state_dir`."""
    return SECRET_PREFIX + hmac.new(_console_key(state_dir), salt.encode(), hashlib.sha256).hexdigest()
