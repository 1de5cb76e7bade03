"""Admission: request envelope (stage A), the shared verdict (B–D), owner stamping and policy checks (E), and the
subset of checks a follow-up passes.

Tier: query (`admit` and `admit_followup` run over the caller's session; stage A and the checks are pure).
"""

from .envelope import Envelope, Opened, first_pool_series, open_envelope
from .followup import FOLLOWUP_CHECKS, admit_followup
from .meta import Meta, parse_meta_header, read_meta
from .pipeline import POLICY_CHECKS, AdmissionRequest, Decision, Screened, admit, judge, screen, stamp_owner

__all__ = [
    "FOLLOWUP_CHECKS",
    "POLICY_CHECKS",
    "AdmissionRequest",
    "Decision",
    "Envelope",
    "Meta",
    "Opened",
    "Screened",
    "admit",
    "admit_followup",
    "first_pool_series",
    "judge",
    "open_envelope",
    "parse_meta_header",
    "read_meta",
    "screen",
    "stamp_owner",
]
