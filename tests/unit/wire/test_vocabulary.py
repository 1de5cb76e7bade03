"""The shared vocabulary: config modes, ingest paths and lifecycle events, artifact kinds and their plan groups."""

from __future__ import annotations

from starforge.wire import (
    ARGPARSE,
    ARTIFACT_GROUPS,
    ARTIFACT_KINDS,
    ASSIGN,
    CONFIG_ARGV,
    CONFIG_MODES,
    CONFIG_NONE,
    CONFIG_OPTION,
    CONFIG_WRITTEN,
    DATA_PATH,
    DATA_SPLITS,
    FLAG,
    INGEST_PATHS,
    LIFECYCLE_EVENTS,
    MERGE,
    PATH_ARTIFACT,
    PATH_HPARAMS,
    PATH_LIFECYCLE,
    PATH_LOGS,
    PATH_METRICS,
    TRAINER_SHIM,
    carries_document,
    entry_shim,
    override_style,
    takes_config_option,
)


def test_config_modes() -> None:
    assert set(CONFIG_MODES) == {"dot-overrides", "hydra-overrides", "cli-flags", "cli-args", "trl-yaml", "pytorch-yaml"}
    assert [override_style(m) for m in CONFIG_MODES] == [ASSIGN, ASSIGN, ARGPARSE, FLAG, MERGE, MERGE]
    # verl is a Hydra app (no --config); NeMo-RL's scripts and tinyrl take one
    assert [m for m in CONFIG_MODES if takes_config_option(m)] == ["dot-overrides"]
    assert [m for m in CONFIG_MODES if carries_document(m)] == ["hydra-overrides", "cli-flags", "trl-yaml",
                                                                 "pytorch-yaml"]
    assert [CONFIG_MODES[m].config for m in CONFIG_MODES] == [
        CONFIG_OPTION, CONFIG_ARGV, CONFIG_ARGV, CONFIG_NONE, CONFIG_WRITTEN, CONFIG_WRITTEN,
    ]
    assert {m: entry_shim(m) for m in CONFIG_MODES if entry_shim(m)} == {"trl-yaml": TRAINER_SHIM}
    assert TRAINER_SHIM == "starforge.trainers.trl_entry"
    assert CONFIG_MODES["trl-yaml"].data == DATA_SPLITS and CONFIG_MODES["dot-overrides"].data == DATA_PATH
    assert override_style("") is None and override_style("nope") is None and not takes_config_option("nope")
    assert not carries_document("nope") and entry_shim("nope") == ""


def test_ingest_vocabulary() -> None:
    assert LIFECYCLE_EVENTS == ("starting", "running", "succeeded", "failed")
    assert INGEST_PATHS == (
        "lifecycle", "logs", "metrics", "hparams", "artifact", "validation", "hardware", "environment/nodes",
        "benchmark", "control",
    )
    assert {PATH_LIFECYCLE, PATH_LOGS, PATH_METRICS, PATH_HPARAMS, PATH_ARTIFACT} <= set(INGEST_PATHS)


def test_artifact_kinds_and_plan_groups() -> None:
    assert ARTIFACT_KINDS == ("checkpoint", "log", "hf_export", "eval_report", "merged_model", "model")
    assert dict(ARTIFACT_GROUPS) == {
        "checkpoints": "checkpoint", "logs": "log", "exports": "hf_export", "evaluations": "eval_report",
    }
    assert set(ARTIFACT_GROUPS.values()) <= set(ARTIFACT_KINDS)


def test_a_job_started_from_a_checkpoint_has_it_as_its_model() -> None:
    from starforge.wire import input_value

    assert input_value("model", {"FORGE_MODEL": "/m/tiny"}) == "/m/tiny"
    assert input_value("model", {"FORGE_MODEL": "/m/tiny", "FORGE_INIT_FROM": "/in/init_from"}) == "/in/init_from"
    assert input_value("model", {"FORGE_MODEL": "", "FORGE_INIT_FROM": ""}) is None
    assert input_value("checkpoint_dir", {"FORGE_OUT_DIR": "/o/", "FORGE_INIT_FROM": "/x"}) == "/o/checkpoints"
