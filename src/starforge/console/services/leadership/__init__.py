"""Leader election with a fencing token: one process per console database runs the scheduler (`elector`), elected by
a lock (`locks`: an advisory lock on PostgreSQL, a file lock on SQLite), its epoch in the `leadership` row
(`record`) checked by every write its scheduler makes.

Tier: shared (a package: each module names its own tier).
"""

from .elector import Elector
from .locks import FileLock, LeaderLock, PostgresLock, leader_lock
from .record import Leader, LostLead, Member, check, current, take

__all__ = [
    "Elector",
    "FileLock",
    "Leader",
    "LeaderLock",
    "LostLead",
    "Member",
    "PostgresLock",
    "check",
    "current",
    "leader_lock",
    "take",
]
