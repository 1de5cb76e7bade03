"""The SDK's way to build a submission: an experiment's JobSpec and bundle as `sf submit` builds them, ready for
`Console.check` and `Console.submit` (`starforge.client`).

It reuses `build_jobspec` (the lock gate, hyperparameters, profiles, provenance) and `pack_submission` (the files,
the secret scan), and adds nothing of its own; unlike `sf submit` it writes nothing to the lab.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starforge.contract import Problem, ProfileEntry

from .jobspec import SubmitOptions, build_jobspec
from .package import pack_submission

__all__ = ["Submission", "build_submission"]


@dataclass(frozen=True)
class Submission:
    """What `Console.submit` takes: the JobSpec, the bundle, the profile, the experiment path and the provenance
    fields of `X-Forge-Meta` (`meta`); or, when `ok` is False, every problem found."""

    spec: dict[str, Any] | None
    bundle: bytes | None
    profile: str
    exp: str
    meta: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Return True when both the spec and the bundle were built."""
        return self.spec is not None and self.bundle is not None and not self.problems


def build_submission(root: Path | str, exp: str, options: SubmitOptions, *, profiles: Sequence[ProfileEntry],
                     catalog: Any = None) -> Submission:
    """Return the JobSpec and bundle of experiment `exp` in the lab at `root`, or every problem; never raises on
    user input.

    `options` holds what `sf submit`'s flags would (`SubmitOptions(profiles=("cpu:1",), sets=("seed=3",))`);
    `profiles` is the console's registry (`Console.cluster_status().profiles`); `catalog` defaults to the
    installed recipe catalog (`client_catalog()`). The tree must be committed unless `options.allow_dirty`.
    """
    if catalog is None:
        from .catalog import client_catalog

        catalog = client_catalog()
    built = build_jobspec(Path(root), exp, options, profiles=profiles, catalog=catalog)
    if not built.ok or built.spec is None:
        return Submission(None, None, built.profile, built.exp, problems=list(built.problems),
                          warnings=list(built.warnings))
    packed = pack_submission(Path(root), built.exp)
    meta = built.provenance.to_meta() if built.provenance is not None else {}
    warnings = [*built.warnings, *packed.warnings]
    if packed.problems or packed.data is None:
        return Submission(None, None, built.profile, built.exp, meta, list(packed.problems), warnings)
    return Submission(built.spec, packed.data, built.profile, built.exp, meta, [], warnings)
