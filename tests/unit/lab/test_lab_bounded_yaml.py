"""The lab reads starforge.yaml and config.yaml through the bounded YAML loader: alias bombs and recursive aliases
become the file's own problem instead of a structure that expands without bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.lab import create_experiment, init_lab, project_name, validate_experiment
from starforge.recipes import Catalog
from tests.unit.test_bounded_yaml import laughs


def test_starforge_yaml_alias_bomb_is_a_lab_problem(tmp_path: Path) -> None:
    (tmp_path / "starforge.yaml").write_text("apiVersion: forge/project/v1\nname: &n bomb\n" + laughs(9))
    name, problems = project_name(tmp_path)
    assert name == ""
    assert [(p.field, p.code) for p in problems] == [("starforge.yaml", "lab_invalid")]
    assert "alias" in problems[0].message and problems[0].hint


def test_starforge_yaml_with_an_ordinary_anchor_still_reads(tmp_path: Path) -> None:
    (tmp_path / "starforge.yaml").write_text("apiVersion: forge/project/v1\nname: &n lab-one\nalias: *n\n")
    assert project_name(tmp_path) == ("lab-one", [])


@pytest.mark.parametrize("config", [laughs(9), "grpo: &g\n  inner: *g\n", "x: " + "[" * 100 + "]" * 100 + "\n"])
def test_config_yaml_alias_bomb_or_recursion_is_a_config_problem(tmp_path: Path, builtin: Catalog,
                                                                 config: str) -> None:
    lab = init_lab(tmp_path / "lab", name="unit-lab")
    exp = create_experiment(lab, "toy", builtin, method="tinyrl/grpo").path
    assert exp is not None
    (exp / "config.yaml").write_text(config)
    result = validate_experiment(lab, "toy", builtin)
    assert [(p.field, p.code) for p in result.problems] == [("config.yaml", "config_invalid")]
    assert result.problems[0].hint
