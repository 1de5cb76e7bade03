"""The submission path's hook: `observed_submission` times each call of the submission use case into the runtime's
`Observations`, labelled by its outcome (started, queued, rejected, error).

Tier: shared (no transaction; it only records into this process's memory).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, ParamSpec

from ..errors import Rejected
from ..outcome import Outcome
from .recorder import Observations

__all__ = ["observed_submission"]

P = ParamSpec("P")


def observed_submission(use_case: Callable[P, Outcome]) -> Callable[P, Outcome]:
    """Wrap a submission use case called with `rt=` (the runtime) so that its duration is recorded under its outcome
    (202: queued, another answer: started, Rejected: rejected, anything else: error); answers and exceptions pass
    through unchanged."""

    @functools.wraps(use_case)
    def timed(*args: P.args, **kwargs: P.kwargs) -> Outcome:
        started = time.perf_counter()
        outcome = "error"
        try:
            answer = use_case(*args, **kwargs)
            outcome = "queued" if answer.status_code == 202 else "started"
            return answer
        except Rejected:
            outcome = "rejected"
            raise
        finally:
            rt: Any = kwargs.get("rt")
            observations = getattr(rt, "observations", None)
            if isinstance(observations, Observations):
                observations.submissions.observe(time.perf_counter() - started, outcome)

    return timed
