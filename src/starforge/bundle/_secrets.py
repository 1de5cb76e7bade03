"""Secrets kept out of bundles: the file names and the file contents a client refuses to upload.

Names: the official client's list (wire-protocol §7.2) followed by our additions (more credential files).
Contents: a short table of high-signal shapes (private keys, cloud access keys, well-known token formats), looked
for in at most the first `MAX_SCAN_BYTES` of a text file. There is no entropy heuristic on purpose: a refusal
must mean a real credential, so a shape is listed only when ordinary code and data practically never take it.
A finding says what was recognised and where, never the matched text.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

__all__ = ["MAX_SCAN_BYTES", "SECRET_PATTERNS", "SecretFinding", "find_secret", "is_secret_name", "scan_content"]

SECRET_PATTERNS: tuple[str, ...] = (
    # the official client's list, in its order (the lab's .gitignore repeats it)
    ".env",
    ".env.*",
    ".envrc",
    ".netrc",
    "credentials.json",
    "*_credentials.json",
    "token.txt",
    "api_key.txt",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    "id_dsa*",
    "secrets.*",
    "*.secret",
    "hf_token*",
    # ours: every dotenv variant, and credential files of common tools. SSH keys stay listed by key type:
    # a bare `id_*` would refuse ordinary files such as id_to_label.json, and key contents are caught below.
    ".env*",
    "_netrc",
    "credentials",
    ".git-credentials",
    ".pypirc",
    ".pgpass",
    ".dockercfg",
    "service-account*.json",
    "service_account*.json",
    "*.ppk",
    "id_xmss*",
)

# Only this much of each file is read: secrets sit near the top of the files that hold them, and a bound keeps
# a lab with large data files fast to pack.
MAX_SCAN_BYTES = 4 * 1024 * 1024
_BINARY_PROBE = 8 * 1024  # a NUL byte in this many leading bytes marks a binary file, which is not scanned
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """Why a file looks like a secret: a stable `kind`, what was recognised, and the 1-based line (0 for a name)."""

    kind: str
    what: str
    line: int = 0

    def describe(self) -> str:
        """Return the reason in words, e.g. "line 3 holds what looks like an AWS access key id"."""
        if self.line:
            return f"line {self.line} holds what looks like {self.what}"
        return self.what


@dataclass(frozen=True, slots=True)
class _Shape:
    kind: str
    what: str
    pattern: re.Pattern[bytes]  # starts with a literal, so the search skips ahead quickly
    word_start: bool = True  # the match must not continue a word on its left
    plausible: Callable[[bytes], bool] | None = None


def _random_looking(token: bytes) -> bool:
    # a Hugging Face token's body is random letters and digits: both cases occur, unlike in an identifier
    body = token[3:]
    return body.upper() != body and body.lower() != body


def _shape(kind: str, what: str, pattern: bytes, *, word_start: bool = True,
           plausible: Callable[[bytes], bool] | None = None) -> _Shape:
    return _Shape(kind, what, re.compile(pattern), word_start, plausible)


_END = rb"(?![A-Za-z0-9_])"
# A PEM header counts only when key material follows it: source code that merely names the header does not.
_PEM_BODY = rb"-----[\s\S]{0,300}?[A-Za-z0-9+/]{40}"

_SHAPES: tuple[_Shape, ...] = (
    _shape("openssh_private_key", "an OpenSSH private key", rb"-----BEGIN OPENSSH PRIVATE KEY" + _PEM_BODY,
           word_start=False),
    _shape("private_key", "a PEM private key", rb"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?" + _PEM_BODY,
           word_start=False),
    _shape("putty_private_key", "a PuTTY private key", rb"PuTTY-User-Key-File-[0-9]+: "),
    _shape("service_account_key", 'a service-account private key (JSON "private_key")',
           rb'"private_key"\s*:\s*"-----BEGIN ', word_start=False),
    _shape("aws_access_key_id", "an AWS access key id", rb"AKIA[0-9A-Z]{16}" + _END,
           plausible=lambda token: not token.endswith(b"EXAMPLE")),  # AWS's documentation placeholders
    _shape("aws_access_key_id", "an AWS access key id", rb"ASIA[0-9A-Z]{16}" + _END),
    _shape("aws_secret_access_key", "an AWS secret access key",
           rb"aws_secret_access_key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"),
    _shape("aws_secret_access_key", "an AWS secret access key",
           rb"AWS_SECRET_ACCESS_KEY[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"),
    _shape("github_token", "a GitHub token", rb"gh[pousr]_[A-Za-z0-9]{36}" + _END),
    _shape("github_token", "a GitHub token", rb"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}" + _END),
    _shape("gitlab_token", "a GitLab access token", rb"glpat-[A-Za-z0-9_-]{20,}"),
    _shape("huggingface_token", "a Hugging Face token", rb"hf_[A-Za-z0-9]{34}" + _END, plausible=_random_looking),
    _shape("slack_token", "a Slack token", rb"xox[abeoprs]-[0-9]{6,}-[0-9A-Za-z-]{8,}"),
    _shape("slack_webhook", "a Slack webhook URL", rb"https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/"
           rb"[A-Za-z0-9]{16,}", word_start=False),
    _shape("stripe_live_key", "a Stripe live key", rb"sk_live_[0-9A-Za-z]{24,}"),
    _shape("stripe_live_key", "a Stripe live key", rb"rk_live_[0-9A-Za-z]{24,}"),
    _shape("openai_api_key", "an OpenAI API key", rb"sk-[A-Za-z0-9_-]{0,160}T3BlbkFJ[A-Za-z0-9_-]{16,}"),
    _shape("anthropic_api_key", "an Anthropic API key", rb"sk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{80,}"),
    _shape("google_api_key", "a Google API key", rb"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    _shape("npm_token", "an npm access token", rb"npm_[A-Za-z0-9]{36}" + _END),
    _shape("pypi_token", "a PyPI API token", rb"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
)


def _matched_pattern(name: str) -> str | None:
    base = posixpath.basename(name.replace("\\", "/")).lower()
    return next((pattern for pattern in SECRET_PATTERNS if fnmatchcase(base, pattern)), None)


def is_secret_name(name: str) -> bool:
    """Return True when the base name of `name` looks like a secret; case is ignored to err on the safe side."""
    return _matched_pattern(name) is not None


def _first_match(shape: _Shape, data: bytes) -> int | None:
    for match in shape.pattern.finditer(data):
        start = match.start()
        if shape.word_start and start and data[start - 1] in _WORD:
            continue
        if shape.plausible is None or shape.plausible(match.group()):
            return start
    return None


def scan_content(data: bytes) -> SecretFinding | None:
    """Return the first secret-looking shape in `data` (its kind and line), or None; binary data is not scanned.

    Only the first `MAX_SCAN_BYTES` are looked at; data with a NUL byte in its first 8 KiB counts as binary.
    """
    if b"\x00" in data[:_BINARY_PROBE]:
        return None
    data = data[:MAX_SCAN_BYTES]
    best: tuple[int, _Shape] | None = None
    for shape in _SHAPES:
        start = _first_match(shape, data)
        if start is not None and (best is None or start < best[0]):
            best = (start, shape)
    if best is None:
        return None
    start, shape = best
    return SecretFinding(shape.kind, shape.what, data.count(b"\n", 0, start) + 1)


def _read_head(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            head = handle.read(_BINARY_PROBE)
            if b"\x00" in head:
                return b""
            return head + handle.read(MAX_SCAN_BYTES - len(head))
    except OSError:  # unreadable here means unpackable too: packing reports it
        return b""


def find_secret(name: str, path: Path | None = None) -> SecretFinding | None:
    """Return why the file `name` (read from `path` when given) looks like a secret, or None.

    Checked in order: the base name of `name`; with `path`, the base name of a symlink's target, then the
    first `MAX_SCAN_BYTES` of a regular file's content.
    """
    pattern = _matched_pattern(name)
    if pattern is not None:
        return SecretFinding("name", f"its name matches {pattern!r}")
    if path is None:
        return None
    if path.is_symlink():
        target = os.path.realpath(path)
        pattern = _matched_pattern(target)
        if pattern is not None:
            return SecretFinding("name", f"it links to {posixpath.basename(target)!r}, a name matching {pattern!r}")
    if not path.is_file():
        return None
    return scan_content(_read_head(path))
