"""The one submission sequence: an experiment's JobSpec (or a sweep's, one per point) and its bundle, built the way
`sf submit`, `sf submit --dry-run` (online and offline), `sf sweep`, the MCP tools and the SDK all build them.

The steps, in order, each stopping the sequence when it refuses: `build_jobspec` (the lock gate, hyperparameters,
profiles, provenance); for a sweep, its points and one spec per point; the caller's `confirm` step (`sf` asks the
console's catalog there: the handshake); `.starforge/jobspec.json` when asked for; `pack_submission` (the files, the
secret scan), whole or only checked. What talks to the console stays with the caller (the lab never imports the
client); nothing is written to the lab unless `spec_file`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from starforge.contract import Problem, ProfileEntry

from .jobspec import BuiltSpec, SubmitOptions, build_jobspec
from .package import Packed, pack_submission

if TYPE_CHECKING:
    from .sweep_points import Axis, Range

__all__ = ["Pack", "Point", "Submission", "Sweep", "at_point", "build_submission"]

Pack = Literal["bundle", "check", "none"]  # pack the bundle, only check its files, or leave it out
Stage = Literal["", "spec", "points", "sweep", "bundle"]


@dataclass(frozen=True)
class Sweep:
    """A sweep's points: every combination of the `--grid` axes crossed with `count` samples of the `--range`
    ranges drawn with `seed` (`starforge.lab.sweep_points`)."""

    axes: Sequence[Axis] = ()
    ranges: Sequence[Range] = ()
    count: int = 0
    seed: int = 0


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its values (`{key: value text}`, appended to `--set`) and the JobSpec built with them."""

    params: Mapping[str, str]
    built: BuiltSpec

    @property
    def spec(self) -> dict[str, Any] | None:
        """Return the point's canonical JobSpec dict."""
        return self.built.spec


@dataclass(frozen=True)
class Submission:
    """What `Console.submit` takes: the JobSpec, the bundle, the profile, the experiment path and the provenance
    fields of `X-Forge-Meta` (`meta`); or, when `ok` is False, every problem found and the `stage` that refused.

    `stage` is "spec" (the JobSpec), "points" (a sweep's points are malformed: a usage error), "sweep" (a point's
    spec) or "bundle"; "" when nothing refused. `built` is the JobSpec as built (for a sweep, without any point's
    values), `points` a sweep's points, `packed` the bundle's files and facts, `spec_file` where the spec was
    written. With `pack="check"` a refused file selection leaves the spec in place (a dry run still asks the
    console about it).
    """

    spec: dict[str, Any] | None
    bundle: bytes | None
    profile: str
    exp: str
    meta: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    stage: Stage = ""
    built: BuiltSpec | None = field(default=None, repr=False)
    points: tuple[Point, ...] = field(default=(), repr=False)
    packed: Packed | None = field(default=None, repr=False)
    spec_file: Path | None = None

    @property
    def ok(self) -> bool:
        """Return True when every asked-for step passed: the spec (each point's) and, when packed, the bundle."""
        return self.spec is not None and not self.problems and not self.stage


def at_point(index: int, point: Mapping[str, str], problems: Sequence[Problem]) -> list[Problem]:
    """Return `problems` of sweep point `index` at `points[<index>].<field>`, their messages naming its values."""
    values = ", ".join(f"{k}={v}" for k, v in point.items())
    return [Problem(f"points[{index}].{p.field}", p.code, f"point {index} ({values}): {p.message}", p.hint, p.data)
            for p in problems]


def _points(root: Path, exp: str, options: SubmitOptions, base: BuiltSpec, sweep: Sweep, *,
            profiles: Sequence[ProfileEntry], catalog: Any) -> tuple[tuple[Point, ...], Stage, list[Problem]]:
    from .sweep_points import point_sets, sweep_points

    kinds = {name: param.type for name, param in base.recipe.params.items()} if base.recipe is not None else {}
    values, problems = sweep_points(sweep.axes, sweep.ranges, sweep.count, seed=sweep.seed, kinds=kinds)
    if problems:
        return (), "points", problems
    points = tuple(Point(p, build_jobspec(root, exp, replace(options, sets=options.sets + point_sets(p)),
                                          profiles=profiles, catalog=catalog)) for p in values)
    refused = [q for i, point in enumerate(points) for q in at_point(i, point.params, point.built.problems)]
    return points, ("sweep" if refused else ""), refused


def build_submission(root: Path | str, exp: str, options: SubmitOptions, *, profiles: Sequence[ProfileEntry],
                     catalog: Any = None, pack: Pack = "bundle", sweep: Sweep | None = None,
                     confirm: Callable[[BuiltSpec], None] | None = None, spec_file: bool = False) -> Submission:
    """Return the JobSpec and bundle of experiment `exp` in the lab at `root`, or every problem of the first step
    that refused; never raises on user input (a `confirm` step may raise to stop the sequence).

    `options` holds what `sf submit`'s flags would (`SubmitOptions(profiles=("cpu:1",), sets=("seed=3",))`);
    `profiles` is the console's registry (`Console.cluster_status().profiles`); `catalog` defaults to the
    installed recipe catalog (`client_catalog()`). The tree must be committed unless `options.allow_dirty`.
    `pack` packs the bundle (the default), only checks its files ("check"), or leaves it out ("none"); `sweep`
    builds one spec per point (`points`); `confirm` runs on the experiment's spec (for a sweep, without any
    point's values: every point shares its recipe and framework) before anything is written or packed; `spec_file` writes `.starforge/jobspec.json`.
    """
    if catalog is None:
        from .catalog import client_catalog

        catalog = client_catalog()
    root = Path(root)
    built = build_jobspec(root, exp, options, profiles=profiles, catalog=catalog)
    if not built.ok or built.spec is None:
        return Submission(None, None, built.profile, built.exp, problems=list(built.problems),
                          warnings=list(built.warnings), stage="spec", built=built)
    meta = built.provenance.to_meta() if built.provenance is not None else {}
    points: tuple[Point, ...] = ()
    if sweep is not None:
        points, stage, problems = _points(root, exp, options, built, sweep, profiles=profiles, catalog=catalog)
        if problems:
            return Submission(None, None, built.profile, built.exp, meta, problems, list(built.warnings), stage,
                              built, points)
    if confirm is not None:
        confirm(built)
    written = None
    if spec_file:
        from starforge.contract import dumps

        from .package import write_spec_file

        assert built.job is not None  # built.ok
        written = write_spec_file(root, dumps(built.job))
    if pack == "none":
        return Submission(built.spec, None, built.profile, built.exp, meta, [], list(built.warnings), "", built,
                          points, None, written)
    packed = pack_submission(root, built.exp, check_only=pack == "check")
    warnings = [*built.warnings, *packed.warnings]
    if packed.problems or (pack == "bundle" and packed.data is None):
        spec = built.spec if pack == "check" else None
        return Submission(spec, None, built.profile, built.exp, meta, list(packed.problems), warnings, "bundle",
                          built, points, packed, written)
    return Submission(built.spec, packed.data, built.profile, built.exp, meta, [], warnings, "", built, points,
                      packed, written)
