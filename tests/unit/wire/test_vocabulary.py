"""The shared vocabulary: config modes, ingest paths and lifecycle events, artifact kinds and their plan groups."""

from __future__ import annotations

from starforge.wire import (
    ARTIFACT_GROUPS,
    ARTIFACT_KINDS,
    ASSIGN,
    CONFIG_MODES,
    FLAG,
    INGEST_PATHS,
    LIFECYCLE_EVENTS,
    PATH_ARTIFACT,
    PATH_HPARAMS,
    PATH_LIFECYCLE,
    PATH_LOGS,
    PATH_METRICS,
    override_style,
    takes_config_option,
)


def test_config_modes() -> None:
    assert set(CONFIG_MODES) == {"dot-overrides", "hydra-overrides", "cli-flags", "cli-args", "trl-yaml", "pytorch-yaml"}
    assert [override_style(m) for m in CONFIG_MODES] == [ASSIGN, ASSIGN, FLAG, FLAG, None, None]
    assert [m for m in CONFIG_MODES if takes_config_option(m)] == ["dot-overrides", "hydra-overrides"]
    assert override_style("") is None and override_style("nope") is None and not takes_config_option("nope")


def test_ingest_vocabulary() -> None:
    assert LIFECYCLE_EVENTS == ("starting", "running", "succeeded", "failed")
    assert INGEST_PATHS == (
        "lifecycle", "logs", "metrics", "hparams", "artifact", "validation", "hardware", "environment/nodes",
        "benchmark",
    )
    assert {PATH_LIFECYCLE, PATH_LOGS, PATH_METRICS, PATH_HPARAMS, PATH_ARTIFACT} <= set(INGEST_PATHS)


def test_artifact_kinds_and_plan_groups() -> None:
    assert ARTIFACT_KINDS == ("checkpoint", "log", "hf_export", "eval_report", "merged_model")
    assert dict(ARTIFACT_GROUPS) == {
        "checkpoints": "checkpoint", "logs": "log", "exports": "hf_export", "evaluations": "eval_report",
    }
    assert set(ARTIFACT_GROUPS.values()) <= set(ARTIFACT_KINDS)
