"""The suites a console offers: the builtin pack first, then the latest enabled version of each published pack; a
name is resolved or refused at its field with the suites on offer; admission's record reads back for the launch."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from starforge.benchmarks import BUILTIN_ROOT
from starforge.bundle import directory_digest
from starforge.console.services.errors import Rejected
from starforge.console.services.registries import benchmark_packs
from starforge.console.store.models import Base, Plugin


@pytest.fixture
def db() -> Iterator[Session]:
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        yield session


def _pack(tmp_path: Path, owner: str, name: str, version: str, suite: str, *, enabled: bool = True,
          at: float = 1.0) -> Plugin:
    root = tmp_path / owner / name / version
    shutil.copytree(BUILTIN_ROOT, root)
    manifest = (root / "plugin.yaml").read_text()
    manifest = manifest.replace("name: basic\n", f"name: {name}\n").replace('version: "1.0.0"', f'version: "{version}"')
    (root / "plugin.yaml").write_text(manifest.replace("basic-choice", suite).replace("basic-arithmetic",
                                                                                      f"{suite}-sums"))
    return Plugin(owner=owner, name=name, version=version, kind="benchmark", digest=directory_digest(root),
                  summary="", enabled=enabled, visibility="public", path=str(root), size_bytes=1,
                  created_by=owner, created_at=at)


def test_the_builtin_suites_come_first_then_each_packs_latest_enabled_version(db: Session, tmp_path: Path) -> None:
    db.add_all([_pack(tmp_path, "ann", "quiz", "1", "quiz-old", at=1), _pack(tmp_path, "ann", "quiz", "2", "quiz", at=2),
                _pack(tmp_path, "bob", "off", "1", "off", enabled=False, at=3),
                _pack(tmp_path, "bob", "dup", "1", "quiz", at=4)])  # a name another pack offers stays that pack's
    db.flush()
    suites = benchmark_packs.available_suites(db)
    assert [(s.name, s.pack, s.pack_version, s.builtin) for s in suites] == [
        ("basic-arithmetic", "starforge/basic", "1.0.0", True), ("basic-choice", "starforge/basic", "1.0.0", True),
        ("quiz-sums", "ann/quiz", "2", False), ("quiz", "ann/quiz", "2", False)]
    assert suites[0].digest == directory_digest(BUILTIN_ROOT) and suites[0].metrics == ("exact_match",)


def test_an_unknown_suite_is_refused_at_its_field_naming_the_offered_ones(db: Session) -> None:
    with pytest.raises(Rejected) as caught:
        benchmark_packs.resolve_suites(db, ["basic-choice", "gsm8k"], field="config.evalkit.suites")
    [problem] = caught.value.problems
    assert problem.field == "config.evalkit.suites" and problem.code == "unknown_benchmark"
    assert "'gsm8k'" in problem.message and "basic-arithmetic, basic-choice" in problem.hint
    chosen = benchmark_packs.resolve_suites(db, ["basic-choice", "basic-choice"], field="x")
    assert [s.name for s in chosen] == ["basic-choice"]


def test_the_record_of_admission_reads_back_for_the_launch(db: Session) -> None:
    chosen = benchmark_packs.resolve_suites(db, ["basic-choice"], field="x")
    resolved = {"benchmarks": benchmark_packs.record(chosen)}
    [back] = benchmark_packs.chosen_suites(resolved)
    assert (back.name, back.task, back.pack, back.digest, back.path) == (
        "basic-choice", "basic_choice", "starforge/basic", chosen[0].digest, str(BUILTIN_ROOT))
    assert benchmark_packs.chosen_suites({}) == []


def test_publishing_a_suite_name_another_pack_offers_is_refused(db: Session, tmp_path: Path) -> None:
    row = _pack(tmp_path, "ann", "quiz", "1", "basic-choice")
    problems = benchmark_packs.check_publish(db, "ann", Path(row.path))
    assert [(p.field, p.code) for p in problems] == [("plugin.yaml.suites[1].name", "duplicate")]
    assert "starforge/basic" in problems[0].message
