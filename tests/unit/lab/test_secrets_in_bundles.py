"""Secrets stay out of a submission's bundle: credential files and contents refuse it, naming the file and the
reason (never the secret), and `starforge.yaml` `bundle.allow_secrets` packs exact files on purpose.

Key material is assembled at run time, so this file holds no credential shape itself.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from starforge.lab import client_catalog, create_experiment, init_lab, pack_submission
from starforge.recipes import Catalog
from tests import forkserver
from tests.unit.lab.conftest import commit, git

REPO = Path(__file__).resolve().parents[3]
KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
PEM = f"-----BEGIN RSA {'PRIVATE'} KEY-----\n{KEY_BODY}\n{KEY_BODY}\n-----END RSA {'PRIVATE'} KEY-----\n"


@pytest.fixture(scope="module")
def builtin_catalog() -> Catalog:
    return client_catalog()


@pytest.fixture
def lab(tmp_path: Path, builtin_catalog: Catalog) -> Path:
    root = init_lab(tmp_path / "lab", name="unit-lab")
    assert create_experiment(root, "toy", builtin_catalog, method="tinyrl/grpo").path is not None
    commit(root)
    return root


def _add(lab: Path, rel: str, text: str) -> None:
    path = lab / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    git(lab, "add", "-f", rel)
    commit(lab)


def _allow(lab: Path, *paths: object) -> None:
    with (lab / "starforge.yaml").open("a") as handle:
        handle.write("bundle:\n  allow_secrets:\n" + "".join(f"    - {json.dumps(p)}\n" for p in paths))
    commit(lab)


def test_an_aws_credentials_file_refuses_the_bundle_and_says_how_to_allow_it(lab: Path) -> None:
    _add(lab, "experiments/toy/.aws/credentials", "[default]\nregion = eu-west-1\n")
    packed = pack_submission(lab, "experiments/toy")
    assert packed.data is None
    [problem] = packed.problems
    assert (problem.field, problem.code) == ("bundle", "bundle_unsafe")
    assert problem.message.startswith("experiments/toy/.aws/credentials looks like a secret: its name matches")
    assert "git rm --cached experiments/toy/.aws/credentials" in problem.hint
    assert 'bundle: {allow_secrets: ["experiments/toy/.aws/credentials"]}' in problem.hint


def test_a_private_key_in_a_file_is_refused_at_its_line_without_echoing_it(lab: Path) -> None:
    _add(lab, "common/deploy.py", '"""Deploy helper."""\n\nKEY = """\n' + PEM + '"""\n')
    _add(lab, "configs/cloud.yaml", "aws:\n  key_id: " + "AKIA" + "Z7Q4XW2MNB5KPL3R" + "\n")
    packed = pack_submission(lab, "experiments/toy", check_only=True)
    assert [(p.field, p.code) for p in packed.problems] == [("bundle", "secret_content")] * 2
    deploy, cloud = sorted(packed.problems, key=lambda p: p.message)
    assert deploy.message == ("common/deploy.py looks like a secret: line 4 holds what looks like a PEM private key; "
                              "nothing was uploaded")
    assert cloud.message.startswith("configs/cloud.yaml looks like a secret: line 2 holds what looks like an AWS "
                                    "access key id")
    for problem in packed.problems:
        assert KEY_BODY not in problem.message + problem.hint and "Z7Q4XW2MNB5KPL3R" not in problem.message
        assert "allow_secrets" in problem.hint


def test_allow_secrets_packs_exactly_the_listed_files_with_a_warning(lab: Path) -> None:
    _add(lab, "experiments/toy/fixtures/test_key.pem", PEM)
    _add(lab, "experiments/toy/fixtures/other.txt", PEM)
    _allow(lab, "experiments/toy/fixtures/test_key.pem", "experiments/toy/fixtures")
    refused = pack_submission(lab, "experiments/toy")
    assert [p.message.split(" ", 1)[0] for p in refused.problems] == ["experiments/toy/fixtures/other.txt"]
    git(lab, "rm", "-q", "experiments/toy/fixtures/other.txt")
    commit(lab)
    packed = pack_submission(lab, "experiments/toy")
    assert packed.problems == [] and packed.data is not None
    assert packed.allowed_secrets == ["experiments/toy/fixtures/test_key.pem"]
    assert [(w.field, w.code) for w in packed.warnings] == [("bundle", "secret_allowed")]
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(packed.data))) as tar:
        assert "experiments/toy/fixtures/test_key.pem" in tar.getnames()


@pytest.mark.parametrize(("entries", "fields"), [
    (["experiments/toy/*.pem"], ["bundle.allow_secrets[0]"]),
    (["ok/file.txt", "/etc/passwd", "../outside.pem", "a/./b", 3], [
        "bundle.allow_secrets[1]", "bundle.allow_secrets[2]", "bundle.allow_secrets[3]", "bundle.allow_secrets[4]"]),
])
def test_a_malformed_allow_list_refuses_every_bad_entry(lab: Path, entries: list[object], fields: list[str]) -> None:
    _allow(lab, *entries)
    packed = pack_submission(lab, "experiments/toy")
    assert packed.data is None
    assert [(p.field, p.code) for p in packed.problems] == [(f, "allow_secrets_invalid") for f in fields]


def test_an_allow_list_that_is_not_a_list_refuses(lab: Path) -> None:
    with (lab / "starforge.yaml").open("a") as handle:
        handle.write("bundle:\n  allow_secrets: experiments/toy/key.pem\n")
    commit(lab)
    [problem] = pack_submission(lab, "experiments/toy", check_only=True).problems
    assert (problem.field, problem.code) == ("bundle.allow_secrets", "allow_secrets_invalid")


def test_new_from_never_copies_a_file_holding_a_key(lab: Path, builtin_catalog: Catalog) -> None:
    (lab / "experiments/toy/notes.md").write_text("# notes\n" + PEM)
    (lab / "experiments/toy/plain.md").write_text("# plain\n")
    made = create_experiment(lab, "copy", builtin_catalog, source="toy")
    assert made.path is not None
    assert (made.path / "plain.md").is_file() and not (made.path / "notes.md").exists()


# ---- the documented opt-in, pasted into a shell -----------------------------------------------------------------

SF = [sys.executable, "-c", "from starforge.cli.main import run; run()"]


def _documented_opt_in() -> list[str]:
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    after = text[text.index("**Packing one on purpose.**"):]
    block = re.search(r"```sh\n(.*?)```", after, re.S)
    assert block is not None
    return block.group(1).splitlines()


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="the documented example uses ssh-keygen")
def test_the_documented_opt_in_works_when_pasted(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("FORGE_", "SF_"))},
           "FORGE_HOME": str(tmp_path / "forge-home"), "FORGE_SERVER": "http://127.0.0.1:9", "NO_COLOR": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CEILING_DIRECTORIES": str(tmp_path),
           "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com"}

    def sf(*args: str) -> subprocess.CompletedProcess[str]:
        return forkserver.run(list(args), cwd=lab, env=env, timeout=120)

    lab = init_lab(tmp_path / "lab", name="docs-lab")
    assert sf("new", "my-grpo", "--method", "tinyrl/grpo").returncode == 0
    commit(lab)
    lines = _documented_opt_in()
    assert lines[-1] == "sf submit my-grpo --profile cpu:1"
    setup = "\n".join(lines[:-1])
    keygen = "\n".join(lines[:2])  # the key alone, before starforge.yaml allows it
    subprocess.run(["bash", "-e", "-c", keygen + "\ngit add experiments/my-grpo/fixtures\n"
                    "git commit -q -m key"], cwd=lab, env=env, check=True)
    refused = sf("submit", "my-grpo", "--profile", "cpu:1", "--dry-run", "--json")
    assert refused.returncode == 1, refused.stderr
    [problem] = json.loads(refused.stdout)["problems"]
    assert (problem["field"], problem["code"]) == ("bundle", "secret_content")
    assert problem["message"].startswith("experiments/my-grpo/fixtures/test_key looks like a secret: line 1 holds "
                                         "what looks like an OpenSSH private key")

    shutil.rmtree(lab / "experiments/my-grpo/fixtures")
    git(lab, "rm", "-rq", "--cached", "experiments/my-grpo/fixtures")
    commit(lab)
    subprocess.run(["bash", "-e", "-c", setup], cwd=lab, env=env, check=True, capture_output=True)
    admitted = sf("submit", "my-grpo", "--profile", "cpu:1", "--dry-run", "--json")
    assert admitted.returncode == 0, admitted.stderr + admitted.stdout
    result = json.loads(admitted.stdout)
    assert "experiments/my-grpo/fixtures/test_key" in result["files"]
    assert [w["code"] for w in result["warnings"] if w["code"] == "secret_allowed"] == ["secret_allowed"]
