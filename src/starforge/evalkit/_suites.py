"""Which suites the job runs and where their packs are: `FORGE_BENCHMARKS` (what the console chose: published packs
mounted, builtin suites in this copy of StarForge), else the builtin pack of this copy (a job started by hand)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..benchmarks import BUILTIN_OWNER, BUILTIN_ROOT, PackRefused, builtin_pack

__all__ = ["BENCHMARKS_VARIABLE", "Chosen", "choose"]

BENCHMARKS_VARIABLE = "FORGE_BENCHMARKS"


@dataclass(frozen=True)
class Chosen:
    """One suite to run: its name, its lm-eval task, its pack (`owner/name`, version), metrics and pack folder."""

    suite: str
    task: str
    pack: str
    version: str
    metrics: tuple[str, ...]
    path: str


def _mounted(raw: str) -> tuple[dict[str, Chosen], list[str]]:
    try:
        items = json.loads(raw)
    except ValueError:
        return {}, [f"{BENCHMARKS_VARIABLE} is not JSON"]
    found: dict[str, Chosen] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not item.get("suite") or not item.get("task"):
            continue
        path = str(BUILTIN_ROOT) if item.get("builtin") else str(item.get("path") or "")  # builtin: this copy's
        if path:
            found[str(item["suite"])] = Chosen(str(item["suite"]), str(item["task"]), str(item.get("pack", "")),
                                               str(item.get("version", "")),
                                               tuple(str(m) for m in item.get("metrics") or ()), path)
    return found, []


def _builtin() -> dict[str, Chosen]:
    try:
        pack = builtin_pack()
    except PackRefused:
        return {}
    return {s.name: Chosen(s.name, s.task, f"{BUILTIN_OWNER}/{pack.name}", pack.version, s.metrics, str(pack.root))
            for s in pack.suites}


def choose(names: Sequence[str], environ: Mapping[str, str]) -> tuple[list[Chosen], list[str]]:
    """Return the suites `names` in order, from the mounted packs or else the builtin pack, or the problems; no
    names with mounted packs: every suite mounted."""
    raw = environ.get(BENCHMARKS_VARIABLE, "")
    offered, problems = _mounted(raw) if raw else (_builtin(), [])
    if problems:
        return [], problems
    if not names and raw:  # the console chose them (spec.evaluation.suites): run every suite it mounted
        return list(offered.values()), []
    missing = [n for n in names if n not in offered]
    if missing:
        where = "the packs the console mounted" if raw else "the builtin pack"
        return [], [f"no suite {', '.join(missing)} in {where} (offered: {', '.join(offered) or 'none'}); "
                    "`sf bench ls` lists the suites of the console"]
    return [offered[n] for n in names], []
