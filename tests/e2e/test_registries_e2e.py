"""Models, corpora and volumes through the real `sf` against a real console: push and list them, train from a
pushed model with `--model <owner>/<name>@<version>`, and another account refused at `spec.model.base`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import Researcher, make_researcher
from tests.integration.conftest import ConsoleProcess


def test_push_list_and_train_from_a_registered_model(researcher: Researcher, console: ConsoleProcess,
                                                     tmp_path: Path) -> None:
    me = researcher
    folder = tmp_path / "tiny-model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "tiny"}', encoding="utf-8")
    (folder / "tokenizer.json").write_text("{}", encoding="utf-8")
    ref = me.json("model", "push", str(folder), "tiny@v1", "--description", "two files")["ref"]
    assert ref == f"{me.user}/tiny@v1"
    models = {m["id"]: m for m in me.json("model", "ls")["models"]}
    assert (models[f"{me.user}/tiny"]["version_names"], models[f"{me.user}/tiny"]["description"]) == (
        ["v1"], "two files")

    assert me.sf("new", "toy", "--method", "tinyrl/grpo").returncode == 0
    me.commit("toy")
    submitted = me.sf("submit", "toy", "--profile", "cpu:1", "--set", "max_num_steps=3", "--model", ref)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    followed = me.sf("job", "logs", job_id, timeout=600)
    assert followed.returncode == 0 and "succeeded" in followed.stderr, followed.stdout[-3000:] + followed.stderr
    seen = next(line for line in followed.stdout.splitlines() if "base model mounted at" in line)
    assert "config.json, tokenizer.json" in seen, seen
    assert str(console.state_dir) not in seen or not console.sandboxed  # the job sees its view, not the host path

    docs = tmp_path / "handbook"
    docs.mkdir()
    (docs / "intro.md").write_text("# Intro\n", encoding="utf-8")
    corpus = me.json("corpus", "push", str(docs), "handbook@v1", "--public")["ref"]
    assert [(c["id"], c["versions"]) for c in me.json("corpus", "ls")["corpora"]] == [
        (f"{me.user}/handbook", ["v1"])]

    volume = tmp_path / "shared-volume"
    volume.mkdir()
    console.add_data("volume", "admin/refs@v1", volume, public=True)
    assert {"id": "admin/refs", "visibility": "public", "allow_download": False, "allow_preview": False,
            "description": "", "versions": ["v1"]} in me.json("volume", "ls")["volumes"]

    other = make_researcher(console, tmp_path / "other", "other", lab=False)
    theirs = me.json("model", "ls", FORGE_HOME=str(other.home))["models"]
    assert f"{me.user}/tiny" not in {m["id"] for m in theirs}
    refused = me.sf("submit", "toy", "--profile", "cpu:1", "--model", ref, "--corpus", corpus, "--json",
                    FORGE_HOME=str(other.home))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    problems = json.loads(refused.stdout)["problems"]
    assert [(p["field"], p["code"]) for p in problems] == [("spec.model.base", "model_unknown")]
    assert "sf model ls" in problems[0]["hint"]
