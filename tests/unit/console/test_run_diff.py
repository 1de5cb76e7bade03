"""The pure parts of a run's provenance: inputs flattened for comparison, the diff's sections and summary, the
per-file stat of two stored bundles, the terminal view of `sf job diff`, and a job page's failure and history in
words."""

from __future__ import annotations

from pathlib import Path

from starforge.bundle import BundleFile, pack_bytes
from starforge.cli._diff_text import diff_text
from starforge.console.services.jobs.bundles import store_bundle
from starforge.console.services.runs.bundle_stat import bundle_stat
from starforge.console.services.runs.diff import compare_inputs, summary_of
from starforge.console.services.runs.inputs import flat_inputs
from starforge.console.web.run_words import event_words, failure_words


def _inputs(lr: float, **extra: object) -> dict[str, object]:
    return {"job_ref": "r-a", "name": "toy", "recipe": {"name": "tinyrl/grpo", "version": "1.0.0", "digest": "sha256:1"},
            "hyperparameters": {"learning_rate": {"value": lr}, "seed": {"value": 7}},
            "config": {"policy": {"lr": lr}, "grpo": {"steps": 3}}, "seeds": {"seed": 7},
            "placement": {"profile": "cpu", "gpus": 1}, "lab": {"commit": "3f2a9c1", "dirty": False}, **extra}


def test_flat_inputs_are_dotted_display_strings() -> None:
    flat = flat_inputs(_inputs(1e-5))
    assert flat["hyperparameters.learning_rate"] == "1e-05" and flat["config.grpo.steps"] == "3"
    assert flat["lab.dirty"] == "false" and "job_ref" not in flat and "name" not in flat


def test_the_learning_rate_is_the_first_difference() -> None:
    sections = compare_inputs(flat_inputs(_inputs(1e-5)), flat_inputs(_inputs(1e-4)), {}, {})
    assert [s["name"] for s in sections][:3] == ["hyperparameters", "config", "spec"]
    assert sections[0]["changes"] == [{"key": "hyperparameters.learning_rate", "a": "1e-05", "b": "0.0001",
                                       "change": "changed"}]
    assert sections[1]["changes"][0]["key"] == "config.policy.lr"  # a config path no hyperparameter names
    summary, first = summary_of(sections)
    assert summary == "learning_rate: 1e-05 → 0.0001" and first is not None and first["section"] == "hyperparameters"


def test_identical_runs_say_so_and_added_keys_are_marked() -> None:
    same = compare_inputs(flat_inputs(_inputs(1e-5)), flat_inputs(_inputs(1e-5)), {"spec.x": "1"}, {"spec.x": "1"})
    assert all(s["same"] for s in same) and summary_of(same)[0] == "The two runs are made of the same inputs."
    more = compare_inputs({}, {"placement.engine": "slurm"}, {}, {})
    [placement] = [s for s in more if s["changes"]]
    assert placement["name"] == "placement" and placement["changes"][0]["change"] == "added"
    assert summary_of(more)[0] == "placement.engine: only in B: slurm"


def _stored(state: Path, files: dict[str, bytes]) -> str:
    data, _info = pack_bytes([BundleFile(name, body) for name, body in files.items()])
    return store_bundle(state, data)


def test_bundle_stat_counts_lines_per_file(tmp_path: Path) -> None:
    a = _stored(tmp_path, {"exp/train.py": b"one\ntwo\n", "exp/gone.txt": b"x\n", "exp/w.bin": b"\x00\x01"})
    b = _stored(tmp_path, {"exp/train.py": b"one\nthree\nfour\n", "exp/new.txt": b"a\nb\n", "exp/w.bin": b"\x00\x02"})
    assert bundle_stat(tmp_path, a, b) == [
        {"path": "exp/gone.txt", "status": "removed", "added": 0, "removed": 1},
        {"path": "exp/new.txt", "status": "added", "added": 2, "removed": 0},
        {"path": "exp/train.py", "status": "changed", "added": 2, "removed": 1},
        {"path": "exp/w.bin", "status": "changed", "added": 0, "removed": 0, "binary": True},
    ]
    assert bundle_stat(tmp_path, a, "sha256:" + "0" * 64) is None  # not stored: no stat
    assert not list(tmp_path.glob("**/sf-diff-*"))


def test_the_terminal_diff_reads_summary_first_and_colours_only_when_asked() -> None:
    sections = compare_inputs(flat_inputs(_inputs(1e-5)), flat_inputs(_inputs(1e-4)), {}, {})
    diff = {"a": {"job_ref": "r-a", "name": "toy", "status": "succeeded"},
            "b": {"job_ref": "r-b", "name": "toy", "status": "succeeded"}, "identical": False,
            "summary": summary_of(sections)[0], "sections": sections,
            "files": [{"path": "exp/train.py", "status": "changed", "added": 2, "removed": 1}],
            "metrics": [{"key": "train/reward", "a": 0.5, "b": 0.75, "delta": 0.25}]}
    text = diff_text(diff)
    lines = text.splitlines()
    assert lines[3] == "learning_rate: 1e-05 → 0.0001" and "Hyperparameters" in lines
    assert "  hyperparameters.learning_rate: 1e-05 → 0.0001" in lines
    assert any("exp/train.py | +2 -1" in line for line in lines) and "\x1b[" not in text
    assert any(line.split() == ["train/reward", "0.5", "0.75", "0.25"] for line in lines)
    assert "\x1b[" in diff_text(diff, colour=True)


def test_a_failure_is_said_in_words_with_the_exit_code_as_a_detail() -> None:
    said = failure_words({"status": "failed", "message": "exit code 2: config error: grpo.x: unknown setting"})
    assert said == {"headline": "config error: grpo.x: unknown setting", "detail": "exit code 2"}
    bare = failure_words({"status": "failed", "message": "exit code 1"})
    assert bare is not None and bare["detail"] == "exit code 1" and "exit code" not in bare["headline"]
    assert failure_words({"status": "succeeded", "message": "exit code 0"}) is None


def test_history_events_are_sentences_without_json() -> None:
    event = event_words({"at": 1.0, "from": "running", "to": "failed", "reason": 'process failed {"exit_code": 2}'})
    assert event == {"at": 1.0, "sentence": "Failed (was running)", "reason": "process failed (exit code 2)"}
    assert event_words({"at": 0, "from": "", "to": "queued", "reason": ""})["sentence"] == "Queued"
