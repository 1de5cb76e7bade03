"""The durable reference of a started job (`Job.executor_ref`): which engine runs it, and the engine's own id.

An engine returns the ref when it starts a job, the console stores it on the job's row and hands it back to the same
engine after a restart; the console's job views show its two first parts. Refs are `<engine>:<id>:…`:
`local:<pid>:<ticks>:<run folder>`, `slurm:<job id>:<run folder>`, `ray:<submission id>:<run folder>`; a ref of an
older console, `<pid>:<ticks>:<run folder>`, is the local engine's.
"""

from __future__ import annotations

__all__ = ["ref_parts"]


def ref_parts(ref: str) -> tuple[str, str]:
    """Return the engine a stored ref belongs to and the engine's own id for it (Slurm job id, Ray submission id)."""
    head, _, rest = ref.partition(":")
    if head.isdigit():
        return "local", head
    return head, rest.partition(":")[0]
