"""Profile expressions `[roles=]name[:gpus]`: turn `--profile` values into pools and a role map (§9.1)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ._model import Pool
from ._problems import Problem

__all__ = ["Placement", "ProfileEntry", "profile_name", "resolve_profiles"]

_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    """One hardware profile of the console's registry (`GET /api/cluster/status` → `profiles[]`)."""

    name: str
    series: str = ""
    num_nodes: int = 1
    gpus_per_node: int = 1
    label: str = ""
    kind: str = ""  # ours: "cpu" when the series has no GPUs (its slots are CPU slots), "gpu"; "" when not published

    @property
    def cpu(self) -> bool:
        """Return True when the console publishes the profile's series as one without GPUs."""
        return self.kind == "cpu"

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ProfileEntry:
        """Read a registry entry as the console publishes it, tolerating missing or malformed counts."""

        def count(key: str) -> int:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1

        return cls(
            name=str(data.get("name") or ""),
            series=str(data.get("series") or ""),
            num_nodes=count("num_nodes"),
            gpus_per_node=count("gpus_per_node"),
            label=str(data.get("label") or ""),
            kind=str(data.get("kind")) if data.get("kind") in ("cpu", "gpu") else "",
        )


@dataclass(frozen=True, slots=True)
class Placement:
    """Pools and roles resolved from profile expressions; `profile` is the first entry's bare name."""

    pools: tuple[Pool, ...]
    roles: dict[str, str] = field(default_factory=dict)
    profile: str = ""

    @property
    def total_gpus(self) -> int:
        """Return Σ nodes × gpus_per_node."""
        return sum(p.gpus for p in self.pools)


def _problem(message: str, hint: str = "", data: dict[str, object] | None = None) -> Problem:
    return Problem("profile", "invalid_profile", message, hint, data or {})


def profile_name(expression: str) -> str:
    """Return the profile a profile expression names: `h200` for `h200`, `h200:8` and `actor,rollout=h200:8`."""
    text = expression.strip()
    if "=" in text:
        text = text.split("=", 1)[1]
    return text.partition(":")[0].strip()


def resolve_profiles(
    expressions: Sequence[str],
    registry: Sequence[ProfileEntry],
    recipe_roles: Sequence[str] = (),
) -> tuple[Placement | None, list[Problem]]:
    """Resolve `--profile` values against the registry; return the placement or the problems."""
    if not expressions:
        return None, [_problem("no --profile given", "pass --profile <name>[:gpus], e.g. --profile h200:8")]
    by_name = {entry.name: entry for entry in registry}
    available = ", ".join(sorted(by_name)) or "(the console publishes none)"
    parsed: list[tuple[list[str] | None, ProfileEntry, int, int]] = []
    problems: list[Problem] = []
    for raw in expressions:
        text = raw.strip()
        role_part: str | None = None
        if "=" in text:
            role_part, _, text = text.partition("=")
            role_part = role_part.strip()
        name, colon, count_text = text.partition(":")
        name, count_text = name.strip(), count_text.strip()
        if not name:
            problems.append(_problem(f"{raw!r} names no profile", "write [roles=]name[:gpus], e.g. h200:8"))
            continue
        roles: list[str] | None = None
        if role_part is not None:
            roles = [r.strip() for r in role_part.split(",") if r.strip()]
            if role_part and not roles:
                problems.append(_problem(f"{raw!r} has an empty role list", "write roles as actor,rollout=h200:8"))
                continue
        entry = by_name.get(name)
        if entry is None:
            problems.append(_problem(f"unknown profile {name!r}", f"available profiles: {available}",
                                     {"got": name, "allowed": sorted(by_name)}))
            continue
        per_node = entry.gpus_per_node
        if not colon:
            nodes, gpus = entry.num_nodes, per_node
        elif not _DIGITS.fullmatch(count_text) or int(count_text) == 0:
            problems.append(_problem(f"{raw!r}: the GPU count must be a positive whole number", "e.g. h200:8"))
            continue
        else:
            count = int(count_text)
            if count <= per_node:
                nodes, gpus = 1, count
            elif count % per_node == 0:
                nodes, gpus = count // per_node, per_node
            else:
                problems.append(
                    _problem(
                        f"{raw!r}: {count} GPUs must be at most {per_node} (one node) or a whole multiple of {per_node}",
                        f"try {name}:{per_node} or {name}:{per_node * max(2, count // per_node + 1)}",
                    )
                )
                continue
        parsed.append((roles or None, entry, nodes, gpus))
    if problems:
        return None, problems
    return _place(parsed, recipe_roles)


def _place(
    parsed: list[tuple[list[str] | None, ProfileEntry, int, int]], recipe_roles: Sequence[str]
) -> tuple[Placement | None, list[Problem]]:
    if len(parsed) == 1:
        roles, entry, nodes, gpus = parsed[0]
        pool_name = roles[0] if roles else "all"
        mapped = roles if roles else list(recipe_roles)
        pool = Pool(pool_name, nodes, gpus, entry.series or entry.name)
        return Placement((pool,), {role: pool_name for role in mapped}, entry.name), []
    pools: list[Pool] = []
    role_map: dict[str, str] = {}
    for roles, entry, nodes, gpus in parsed:
        if not roles:
            return None, [
                _problem(
                    f"with several --profile values each needs roles; {entry.name!r} has none",
                    f"write e.g. --profile actor,rollout={entry.name}",
                )
            ]
        for role in roles:
            if role in role_map:
                return None, [_problem(f"role {role!r} appears in more than one --profile", "map each role once")]
            role_map[role] = roles[0]
        if any(p.name == roles[0] for p in pools):
            return None, [_problem(f"two --profile values would both create pool {roles[0]!r}")]
        pools.append(Pool(roles[0], nodes, gpus, entry.series or entry.name))
    return Placement(tuple(pools), role_map, parsed[0][1].name), []
