"""What the scheduler writes on a job besides its status: the reason of a job an engine queues, the revocation
of a run's ingest tokens once it can no longer report; and what it reads of them: the image digests jobs hold."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...engines import ExecState
from ...engines.base import ref_parts
from ..services.context import Runtime
from ..services.jobs.rows import TERMINAL
from ..store.models import Job, Token

__all__ = ["image_digests_in_use", "queued_reason", "revoke_run_tokens"]


def image_digests_in_use(rt: Runtime) -> set[str]:
    """Return the image digests of every job that has not ended (the image cache never evicts one of them)."""
    with rt.db.read() as db:
        return set(db.scalars(select(Job.image_digest).distinct()
                              .where(Job.image_digest != "", Job.status.not_in(TERMINAL))))


def queued_reason(engine: str, ref: str, state: ExecState) -> str:
    """Return the reason of a job an engine has accepted and queues: the engine, its id, and why it waits."""
    why = f": {state.detail}" if state.detail else ""
    return f"queued by {engine} as {ref_parts(ref)[1]}{why}"


def revoke_run_tokens(db: Session, job_id: str, *, now: float) -> None:
    """Revoke, at `now`, every ingest token of the run `job_id` still valid (over the caller's session)."""
    for token in db.scalars(select(Token).where(Token.kind == "run", Token.run_id == job_id,
                                                Token.revoked_at.is_(None))):
        token.revoked_at = now
