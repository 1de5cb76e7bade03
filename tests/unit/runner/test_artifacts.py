"""Artifact discovery under FORGE_OUT_DIR: globs, step parsing, ordering, formats and sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.runner import ArtifactGlobs, scan, size_of, step_of


@pytest.mark.parametrize(
    ("path", "step"),
    [
        ("checkpoints/step_5", 5),
        ("checkpoints/step-12/model.npz", 12),
        ("checkpoints/global_step_7", 7),
        ("step_3/sub/step_9", 9),
        ("checkpoints/mystep_5", None),
        ("checkpoints/step_", None),
        ("logs", None),
    ],
)
def test_step_of(path: str, step: int | None) -> None:
    assert step_of(path) == step


def test_scan_orders_by_step_and_describes_each_match(tmp_path: Path) -> None:
    for step in (10, 5, 40):
        (tmp_path / "checkpoints" / f"step_{step}").mkdir(parents=True)
        (tmp_path / "checkpoints" / f"step_{step}" / "w.npz").write_bytes(b"x" * step)
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "report.json").write_text("{}")
    globs = ArtifactGlobs(
        checkpoints=("checkpoints/step_*", "checkpoints/step_5"),  # the repeat is registered once
        logs=("logs",),
        evaluations=("eval/*.json",),
        formats={"checkpoint": "npz", "eval_report": "json"},
    )
    found = scan(tmp_path, globs.groups(), globs.formats)

    assert [(a.kind, Path(a.path).relative_to(tmp_path).as_posix(), a.step, a.size_bytes) for a in found] == [
        ("checkpoint", "checkpoints/step_5", 5, 5),
        ("checkpoint", "checkpoints/step_10", 10, 10),
        ("checkpoint", "checkpoints/step_40", 40, 40),
        ("eval_report", "eval/report.json", None, 2),
    ]
    assert all(Path(a.path).is_absolute() for a in found)
    assert found[0].fields() == {"format": "npz", "step": 5, "size_bytes": 5}
    assert scan(tmp_path / "missing", globs.groups(), globs.formats) == []


def test_size_of(tmp_path: Path) -> None:
    assert size_of(tmp_path / "absent") is None
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "a").write_bytes(b"123")
    (tmp_path / "d" / "e" / "b").write_bytes(b"4567")
    assert size_of(tmp_path / "d") == 7
    assert size_of(tmp_path / "d" / "a") == 3
