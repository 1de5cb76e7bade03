"""Stage A of a submission: the envelope as it arrived (the `X-Forge-Meta` text, or multipart parts) read into
the checked `Meta`, its warnings and the bundle.

Tier: shared (pure; no database). Two shapes arrive at `POST /api/jobs`: the official client's gzip body with the
envelope in `X-Forge-Meta` (ISO-8859-1 JSON), and our tool shape, `multipart/form-data` with a `spec` JSON part,
optional `exp` and `profile` fields and an optional `bundle` file. Both end in the same `read_meta` check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....contract import Problem
from ..errors import Rejected
from ..json_text import json_depth_problem, load_json
from ..uploads import SpooledBody
from .meta import Meta, parse_meta_header, read_meta

__all__ = ["Envelope", "Opened", "first_pool_series", "open_envelope"]

_TITLE = "The submission was rejected"


@dataclass(frozen=True)
class Envelope:
    """A submission as it arrived: the `X-Forge-Meta` text and the raw body, or the parts of a multipart body."""

    meta_header: str = ""  # the header's text, each character one ISO-8859-1 byte; "" when absent
    body: SpooledBody | None = None  # the gzip bundle of the header shape (size 0: none sent)
    parts: dict[str, bytes | str] | None = None  # multipart/form-data: files as bytes, fields as text


@dataclass(frozen=True)
class Opened:
    """A submission past stage A: the checked envelope, its warnings, and where the bundle is (if one was sent)."""

    meta: Meta
    warnings: list[Problem]
    bundle: bytes | SpooledBody | None

    def bundle_bytes(self) -> bytes | None:
        """Return the bundle's bytes (blocking when it is spooled), or None when no bundle was sent."""
        if self.bundle is None or isinstance(self.bundle, bytes):
            return self.bundle
        return self.bundle.read_bytes()


def first_pool_series(doc: Any) -> str:
    """Return the series of the spec's first pool (the default profile of a tool submission), or ""."""
    try:
        return str(doc["spec"]["resources"]["pools"][0].get("series") or "")
    except (KeyError, IndexError, TypeError, AttributeError):
        return ""


def _from_parts(parts: dict[str, bytes | str]) -> tuple[Any, bytes | None, list[Problem]]:
    raw = parts.get("spec")
    if raw is None:
        return None, None, [Problem("spec", "meta_invalid", "the multipart body needs a `spec` part (JSON)",
                                    "send the JobSpec as a form field named spec, the bundle as a file named bundle")]
    spec, problems = load_json(raw, "spec")
    if problems:
        return None, None, problems
    exp = parts.get("exp")
    profile = parts.get("profile")
    inner = spec.get("spec") if isinstance(spec, dict) else None
    source = inner.get("source", {}) if isinstance(inner, dict) else {}
    meta = {
        "exp": exp if isinstance(exp, str) and exp else (source.get("exp") if isinstance(source, dict) else None),
        "profile": profile if isinstance(profile, str) and profile else first_pool_series(spec),
        "spec": spec,
    }
    bundle = parts.get("bundle")
    return meta, (bundle if isinstance(bundle, bytes) and bundle else None), []


def _from_header(text: str, body: SpooledBody | None) -> tuple[Any, SpooledBody | None, list[Problem]]:
    too_deep = json_depth_problem(text, "X-Forge-Meta")
    if too_deep is not None:
        return None, None, [too_deep]
    doc, problems = parse_meta_header(text.encode("latin-1") or None)
    return doc, (body if body is not None and body.size else None), problems


def open_envelope(envelope: Envelope) -> Opened:
    """Return the checked envelope of a submission; raise Rejected (400) with the envelope's problems."""
    found: tuple[Any, bytes | SpooledBody | None, list[Problem]]
    if envelope.parts is not None:
        found = _from_parts(envelope.parts)
    else:
        found = _from_header(envelope.meta_header, envelope.body)
    doc, bundle, problems = found
    if problems:
        raise Rejected(_TITLE, problems)
    meta, problems, warnings = read_meta(doc)
    if problems or meta is None:
        raise Rejected(_TITLE, problems, warnings=warnings)
    return Opened(meta, warnings, bundle)
