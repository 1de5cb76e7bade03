"""`lab.build_submission` is the one sequence `sf submit`, its dry runs, `sf sweep`, MCP and the SDK use: each step
in order, the first refusal stops it at its stage, and the caller's console step runs only on a built spec, before
anything is written or packed."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.lab import (
    SPEC_FILE,
    BuiltSpec,
    SubmitOptions,
    Sweep,
    build_submission,
)
from starforge.lab.sweep_points import parse_grid
from starforge.recipes import Catalog
from tests.unit.lab.conftest import REGISTRY, commit, git


def _secret(lab: Path) -> None:
    path = lab / "experiments/toy/.aws/credentials"  # a secret by its name
    path.parent.mkdir(parents=True)
    path.write_text("[default]\nregion = eu-west-1\n")
    git(lab, "add", "-f", "experiments/toy/.aws/credentials")
    commit(lab)


def test_the_default_sequence_builds_the_spec_and_the_bundle_and_writes_nothing(lab: Path, builtin: Catalog) -> None:
    seen: list[BuiltSpec] = []
    sub = build_submission(lab, "toy", SubmitOptions(profiles=("cpu",)), profiles=REGISTRY, catalog=builtin,
                           confirm=seen.append)
    assert sub.ok and sub.stage == "" and sub.spec is not None and sub.bundle
    assert sub.packed is not None and "experiments/toy/config.yaml" in sub.packed.files
    assert sub.meta["git_commit"] and sub.exp == "experiments/toy" and sub.profile == "cpu"
    assert [b.spec for b in seen] == [sub.spec]  # the console's step ran once, on the spec sent
    assert sub.spec_file is None and not (lab / SPEC_FILE).exists()


def test_a_refused_spec_stops_before_the_console_step_and_the_bundle(lab: Path, builtin: Catalog) -> None:
    seen: list[BuiltSpec] = []
    sub = build_submission(lab, "toy", SubmitOptions(profiles=("no-such-profile",)), profiles=REGISTRY,
                           catalog=builtin, confirm=seen.append, spec_file=True)
    assert not sub.ok and sub.stage == "spec" and sub.problems and sub.spec is None
    assert seen == [] and sub.packed is None and not (lab / SPEC_FILE).exists()


def test_the_spec_file_is_written_after_the_console_step_and_before_packing(lab: Path, builtin: Catalog) -> None:
    order: list[str] = []

    def confirm(built: BuiltSpec) -> None:
        order.append("written" if (lab / SPEC_FILE).exists() else "console step")

    sub = build_submission(lab, "toy", SubmitOptions(profiles=("cpu",)), profiles=REGISTRY, catalog=builtin,
                           confirm=confirm, spec_file=True)
    assert order == ["console step"] and sub.spec_file == lab / SPEC_FILE and sub.spec_file.is_file()


def test_a_refused_bundle_stops_at_the_bundle_and_a_dry_run_keeps_the_spec_to_ask_about(
        lab: Path, builtin: Catalog) -> None:
    _secret(lab)
    full = build_submission(lab, "toy", SubmitOptions(profiles=("cpu",)), profiles=REGISTRY, catalog=builtin)
    assert (full.stage, full.spec, full.bundle) == ("bundle", None, None) and not full.ok
    assert [(p.field, p.code) for p in full.problems] == [("bundle", "bundle_unsafe")]
    checked = build_submission(lab, "toy", SubmitOptions(profiles=("cpu",)), profiles=REGISTRY, catalog=builtin,
                               pack="check")
    assert checked.stage == "bundle" and checked.spec is not None and checked.bundle is None
    assert checked.problems == full.problems


def test_check_and_none_pack_nothing(lab: Path, builtin: Catalog) -> None:
    checked = build_submission(lab, "toy", SubmitOptions(profiles=("cpu",)), profiles=REGISTRY, catalog=builtin,
                               pack="check")
    assert checked.ok and checked.bundle is None and checked.packed is not None and checked.packed.files
    bare = build_submission(lab, "toy", SubmitOptions(profiles=("cpu",)), profiles=REGISTRY, catalog=builtin,
                            pack="none")
    assert bare.ok and bare.bundle is None and bare.packed is None


def test_a_sweep_builds_one_spec_per_point_and_packs_the_bundle_once(lab: Path, builtin: Catalog) -> None:
    axes, problems = parse_grid(["seed=1,2,3"])
    assert not problems
    sub = build_submission(lab, "toy", SubmitOptions(profiles=("cpu",)), profiles=REGISTRY, catalog=builtin,
                           sweep=Sweep(axes))
    assert sub.ok and sub.bundle and [dict(p.params) for p in sub.points] == [{"seed": "1"}, {"seed": "2"},
                                                                             {"seed": "3"}]
    assert [p.spec["spec"]["hyperparams"]["seed"] for p in sub.points if p.spec] == [1, 2, 3]


def test_a_sweep_point_refused_names_its_index_and_values(lab: Path, builtin: Catalog) -> None:
    axes, _ = parse_grid(["seed=1,oops"])
    sub = build_submission(lab, "toy", SubmitOptions(profiles=("cpu",)), profiles=REGISTRY, catalog=builtin,
                           sweep=Sweep(axes), confirm=lambda built: pytest.fail("the console step ran"))
    assert sub.stage == "sweep" and not sub.ok and sub.bundle is None
    assert {p.field.split(".", 1)[0] for p in sub.problems} == {"points[1]"}
    assert all("point 1 (seed=oops)" in p.message for p in sub.problems)


def test_malformed_sweep_points_stop_at_the_points(lab: Path, builtin: Catalog) -> None:
    from starforge.lab.sweep_points import parse_ranges

    ranges, problems = parse_ranges(["seed=1:5"])
    assert not problems
    sub = build_submission(lab, "toy", SubmitOptions(profiles=("cpu",)), profiles=REGISTRY, catalog=builtin,
                           sweep=Sweep(ranges=ranges, count=0))
    assert sub.stage == "points" and sub.problems and sub.points == ()
