"""Stage A of a submission: the envelope as it arrived (the `X-Forge-Meta` text, or multipart parts) read into
the checked `Meta`, its warnings and the bundle.

Tier: shared (pure; no database). Two shapes arrive at `POST /api/jobs`: the official client's gzip body with the
envelope in `X-Forge-Meta` (ISO-8859-1 JSON), and our tool shape, `multipart/form-data` with a `spec` JSON part,
optional `exp` and `profile` fields and an optional `bundle` file. Both end in the same `read_meta` check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....contract import Problem
from ..errors import Rejected
from ..json_text import json_depth_problem, load_json
from ..uploads import SpooledBody
from .meta import Meta, parse_meta_header, read_meta

__all__ = ["Envelope", "Opened", "Parts", "bundle_part", "first_pool_series", "open_envelope", "small_part"]

Parts = Mapping[str, "str | bytes | SpooledBody"]  # a multipart body: small parts as text or bytes, the bundle spooled

_TITLE = "The submission was rejected"


@dataclass(frozen=True)
class Envelope:
    """A submission as it arrived: the `X-Forge-Meta` text and the raw body, or the parts of a multipart body."""

    meta_header: str = ""  # the header's text, each character one ISO-8859-1 byte; "" when absent
    body: SpooledBody | None = None  # the gzip bundle of the header shape (size 0: none sent)
    parts: Parts | None = None  # multipart/form-data: small parts as text or bytes, the `bundle` part spooled


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


def bundle_part(parts: Parts) -> bytes | SpooledBody | None:
    """Return the `bundle` part of a multipart body, or None when none (or an empty one) was sent."""
    found = parts.get("bundle")
    if isinstance(found, str):
        return found.encode("latin-1", "replace") if found else None  # a bundle sent as a field (no file name)
    if isinstance(found, bytes):
        return found or None
    return found if found is not None and found.size else None


def small_part(parts: Parts, name: str) -> bytes | str | None:
    """Return a small part (`spec`, `sweep`, a field) as it arrived, or None when absent."""
    found = parts.get(name)
    return found if found is None or isinstance(found, (bytes, str)) else found.read_bytes()


def _from_parts(parts: Parts) -> tuple[Any, bytes | SpooledBody | None, list[Problem]]:
    raw = small_part(parts, "spec")
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
    return meta, bundle_part(parts), []


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
