"""The benchmark suites a console offers (the builtin pack and enabled published packs), resolving suite names and
the record admission keeps of the chosen ones (`resolved["benchmarks"]`), which the launch mounts into the job.

Tier: query (runs over the caller's session; never begins or commits a transaction). A pack is a plugin of kind
`benchmark`; the latest enabled version of each pack offers its suites; a suite name belongs to one pack only (the
builtin pack first, then the first pack published with it), which `check_publish` keeps so.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....benchmarks import BUILTIN_OWNER, BUILTIN_ROOT, KIND, Pack, PackRefused, builtin_pack, read_pack
from ....bundle import directory_digest
from ....contract import Problem
from ...store.models import Plugin
from ..errors import Rejected

__all__ = [
    "KIND",
    "Suite",
    "available_suites",
    "check_publish",
    "chosen_suites",
    "record",
    "resolve_suites",
]

_TITLE = "The submission was rejected"


@dataclass(frozen=True)
class Suite:
    """One benchmark suite on offer: its name, the pack (`owner/name`) and version that holds it, the pack's digest,
    the metrics it reports, what it measures, whether it is builtin, and (for the launch) its lm-eval task and the
    pack's folder on the console."""

    name: str
    pack: str
    pack_version: str
    digest: str
    metrics: tuple[str, ...]
    description: str
    builtin: bool
    task: str = ""
    path: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the wire form of one suite (`GET /api/benchmarks`), without the console's folder."""
        return {"name": self.name, "pack": self.pack, "pack_version": self.pack_version, "digest": self.digest,
                "metrics": list(self.metrics), "description": self.description, "builtin": self.builtin,
                "task": self.task}


@functools.cache
def _builtin() -> tuple[Pack, str]:
    return builtin_pack(), directory_digest(BUILTIN_ROOT)


def _suites_of(pack: Pack, owner: str, digest: str, builtin: bool) -> list[Suite]:
    return [Suite(s.name, f"{owner}/{pack.name}", pack.version, digest, s.metrics, s.description, builtin, s.task,
                  str(pack.root)) for s in pack.suites]


@functools.lru_cache(maxsize=256)
def _read(path: str, digest: str) -> Pack | None:
    """Return the pack at `path` (published versions are immutable: one read per version and digest), None if it no
    longer reads."""
    try:
        return read_pack(Path(path))
    except (PackRefused, OSError):
        return None


def _published(db: Session) -> list[tuple[Plugin, Pack]]:
    """Return the latest enabled version of each published benchmark pack, oldest pack first."""
    latest: dict[tuple[str, str], Plugin] = {}
    first: dict[tuple[str, str], float] = {}
    rows = db.scalars(select(Plugin).where(Plugin.kind == KIND, Plugin.enabled.is_(True))
                      .order_by(Plugin.created_at, Plugin.id))
    for row in rows:
        key = (row.owner, row.name)
        first.setdefault(key, row.created_at)
        latest[key] = row
    out = []
    for key in sorted(latest, key=lambda k: first[k]):
        row = latest[key]
        pack = _read(row.path, row.digest)
        if pack is not None:  # checked at publish: a pack that no longer reads (files gone) offers nothing
            out.append((row, pack))
    return out


def available_suites(db: Session) -> list[Suite]:
    """Return every suite this console offers: the builtin pack's, then those of the enabled published packs."""
    pack, digest = _builtin()
    suites = _suites_of(pack, BUILTIN_OWNER, digest, True)
    taken = {s.name for s in suites}
    for row, published in _published(db):
        for suite in _suites_of(published, row.owner, row.digest, False):
            if suite.name not in taken:
                taken.add(suite.name)
                suites.append(suite)
    return suites


def resolve_suites(db: Session, names: Sequence[str], *, field: str) -> list[Suite]:
    """Return the suites called `names` (in that order, once each); raise Rejected at `field` for an unknown one,
    the hint listing the suites on offer."""
    offered = {s.name: s for s in available_suites(db)}
    wanted = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not wanted:
        raise Rejected(_TITLE, [Problem(field, "missing_field", "name at least one benchmark suite",
                                        f"suites on offer: {', '.join(offered)} (sf bench ls)")])
    unknown = [n for n in wanted if n not in offered]
    if unknown:
        raise Rejected(_TITLE, [Problem(
            field, "unknown_benchmark",
            f"no benchmark suite {', '.join(repr(n[:80]) for n in unknown)} on this console",
            f"suites on offer: {', '.join(offered)} (sf bench ls); publish a pack with sf plugin publish",
            data={"choices": list(offered)})])
    return [offered[n] for n in wanted]


def record(suites: Sequence[Suite]) -> list[dict[str, Any]]:
    """Return what admission keeps as `resolved["benchmarks"]`: one entry per chosen suite, pinned by digest."""
    return [{"suite": s.name, "task": s.task, "pack": s.pack, "version": s.pack_version, "digest": s.digest,
             "metrics": list(s.metrics), "builtin": s.builtin, "path": s.path} for s in suites]


def chosen_suites(resolved: Mapping[str, Any]) -> list[Suite]:
    """Return the suites admission recorded in `resolved` (`record`'s form); entries that are not are skipped.

    A builtin suite is found in the running console's own package, so an upgrade that moved the package still
    mounts it."""
    out = []
    for item in resolved.get("benchmarks") or []:
        if not isinstance(item, dict) or not item.get("suite") or not item.get("task"):
            continue
        builtin = bool(item.get("builtin"))
        path = str(BUILTIN_ROOT) if builtin else str(item.get("path") or "")
        out.append(Suite(str(item["suite"]), str(item.get("pack", "")), str(item.get("version", "")),
                         str(item.get("digest", "")), tuple(str(m) for m in item.get("metrics") or ()), "",
                         builtin, str(item["task"]), path))
    return out


def check_publish(db: Session, owner: str, folder: Path) -> list[Problem]:
    """Return why a package of kind `benchmark` in `folder` may not be published under `owner` (none: it may):
    a pack that does not read, or a suite name another pack already offers."""
    try:
        pack = read_pack(folder)
    except PackRefused as exc:
        return exc.problems
    problems = []
    mine = f"{owner}/{pack.name}"
    others = {s.name: s.pack for s in available_suites(db) if s.pack != mine}
    for i, suite in enumerate(pack.suites):
        if suite.name in others:
            problems.append(Problem(f"plugin.yaml.suites[{i}].name", "duplicate",
                                    f"suite {suite.name!r} is already offered by {others[suite.name]}",
                                    "give the suite a name of its own, such as <pack>-<suite>"))
    return problems
