"""tinyrl config loading: YAML plus typed dot-overrides, every problem reported, platform sections left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.tinyrl import load_config, type_literal

TEMPLATE_CONFIG = (
    Path(__file__).resolve().parents[3] / "src" / "starforge" / "recipes" / "builtin" / "tinyrl" / "grpo" / "template"
    / "config.yaml"
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("Yes", True),
        ("off", False),
        ("007", 7),
        ("-1_000", -1000),
        ("1e-6", 1e-06),
        ("0.5", 0.5),
        (".5", 0.5),
        ("nan", "nan"),
        ("inf", "inf"),
        ("adam", "adam"),
        ("", ""),
    ],
)
def test_type_literal_follows_the_set_rules(text: str, value: object) -> None:
    typed = type_literal(text)
    assert typed == value
    assert type(typed) is type(value)


def test_template_config_loads_with_overrides() -> None:
    config, problems = load_config(TEMPLATE_CONFIG, ["grpo.max_num_steps=7", "policy.optimizer.kwargs.lr=1e-2"])
    assert problems == []
    assert config is not None
    assert config.max_num_steps == 7
    assert config.learning_rate == pytest.approx(0.01)
    assert config.flat()["policy.optimizer.kwargs.lr"] == pytest.approx(0.01)


def test_missing_keys_take_defaults_and_other_sections_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("eval:\n  suites: [gsm8k]\ndata:\n  volumes: [alice/x]\ngrpo:\n  seed: 3\n")
    config, problems = load_config(path)
    assert problems == []
    assert config is not None
    assert (config.seed, config.max_num_steps, config.optimizer) == (3, 60, "adam")


def test_yaml_exponent_without_dot_is_read_as_a_float(tmp_path: Path) -> None:
    # PyYAML (YAML 1.1) loads `1e-3` as a string; a float setting accepts it anyway.
    path = tmp_path / "config.yaml"
    path.write_text("policy:\n  optimizer:\n    kwargs:\n      lr: 1e-3\n")
    config, problems = load_config(path)
    assert problems == []
    assert config is not None and config.learning_rate == pytest.approx(0.001)


def test_every_problem_is_reported_in_order(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("grpo:\n  max_num_steps: 2.0\n  seed: 4\n  seeed: 1\ncheckpointing: 5\n")
    config, problems = load_config(path, ["task.max_operand=99", "policy.optimizer.name=lion", "grpo.seed.x=1"])
    assert config is None
    assert [str(p) for p in problems] == [
        "grpo.seed.x: cannot set it: grpo.seed is 4, not a mapping",
        "grpo.seeed: unknown setting (did you mean grpo.seed?)",
        "checkpointing: must be a mapping, not int",
        "grpo.max_num_steps: must be an integer, not 2.0",
        "policy.optimizer.name: must be one of adam, sgd, not 'lion'",
        "task.max_operand: must be at most 20, not 99",
    ]


def test_unreadable_files_are_problems(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("grpo: [unclosed\n")
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n")
    for path, message in [(tmp_path / "none.yaml", "cannot read"), (bad, "not valid YAML"), (listed, "a mapping")]:
        config, problems = load_config(path)
        assert config is None
        assert message in str(problems[0])
