"""`Outcome`: an answer whose status a use case decides (200 or 202 for a submission, 400 for a device poll).

Tier: shared (a value; no database). Errors still travel as `errors.*`; an Outcome is for answers that are not
errors in the console's sense but still carry their own status, so the route only hands them over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Outcome"]


@dataclass(frozen=True)
class Outcome:
    """The status code and JSON object to answer with."""

    status_code: int
    body: dict[str, Any]
