"""Admission: request envelope (stage A), the shared verdict (B–D), owner stamping and policy checks (E)."""

from .meta import Meta, parse_meta_header, read_meta
from .pipeline import POLICY_CHECKS, AdmissionRequest, Decision, admit, stamp_owner

__all__ = [
    "POLICY_CHECKS",
    "AdmissionRequest",
    "Decision",
    "Meta",
    "admit",
    "parse_meta_header",
    "read_meta",
    "stamp_owner",
]
