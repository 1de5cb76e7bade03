"""Whether a database already stands at the newest migration, told without importing Alembic (which costs every
console start ~0.3 s of CPU): only a yes that is certain counts, and anything else leaves the answer to Alembic.

Tier: store (a read of `alembic_version` on the caller's connection; never writes).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from sqlalchemy import Connection, inspect, text

__all__ = ["is_current", "newest_revision"]

_FIELD = re.compile(r"^(revision|down_revision)\s*(?::[^=]+)?=\s*(.+?)\s*$", re.M)
_QUOTED = re.compile(r"""^(['"])([\w.-]+)\1$""")


@functools.cache
def newest_revision(versions: Path) -> str | None:
    """Return the one head of the migrations under `versions` (the revision no other one follows), or None when the
    files do not say it plainly (a merge, several heads, a revision computed rather than written as a literal)."""
    revisions: set[str] = set()
    followed: set[str] = set()
    for script in sorted(versions.rglob("*.py")):
        fields = {match[1]: match[2] for match in _FIELD.finditer(script.read_text(encoding="utf-8"))}
        revision = _QUOTED.match(fields.get("revision", ""))
        down = fields.get("down_revision", "")
        follows = _QUOTED.match(down)
        if revision is None or (down != "None" and follows is None):
            return None
        revisions.add(revision.group(2))
        if follows is not None:
            followed.add(follows.group(2))
    heads = revisions - followed
    return next(iter(heads)) if len(heads) == 1 and followed <= revisions else None


def is_current(connection: Connection, versions: Path) -> bool:
    """Return True only when the database on `connection` records exactly the newest revision under `versions`."""
    head = newest_revision(versions)
    if head is None or not inspect(connection).has_table("alembic_version"):
        return False
    stored = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return stored == [head]
