"""Secrets stay out of bundles: credential file names, secret-looking contents, bounded scans, exact opt-ins.

Every token below is assembled at run time from harmless parts, so this file never holds a credential shape
itself (repository secret scanners stay quiet).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from starforge.bundle import MAX_SCAN_BYTES, find_secret, is_secret_name, scan_content, select_files

B64 = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"


def pem(label: str) -> str:
    return f"-----BEGIN {label}-----\n{B64}\n{B64}\n-----END {label}-----\n"


AWS_ID = "AKIA" + "Z7Q4XW2MNB5KPL3R"
TOKENS = {
    "openssh_private_key": pem("OPENSSH " + "PRIVATE KEY"),
    "private_key": pem("RSA " + "PRIVATE KEY"),
    "putty_private_key": "PuTTY-User-Key-File-" + "3: ssh-ed25519\n",
    "service_account_key": '{"type": "service_account", "private_' + 'key": "-----BEGIN ' + "PRIVATE KEY" + '-----\\n'
                           + B64 + '\\n"}\n',
    "aws_access_key_id": f"aws_access_key_id = {AWS_ID}\n",
    "aws_secret_access_key": "aws_secret_access_key" + " = " + "wJalrXUtnFEMIK7MDENGbPxRfiCYz9Xq4Bv2Lp8N\n",
    "github_token": "token: " + "ghp" + "_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\n",
    "gitlab_token": "glpat" + "-" + "xY9zW8vU7tS6rQ5pO4nM\n",
    "huggingface_token": "HF_TOKEN=" + "hf" + "_" + "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUi\n",
    "slack_token": "xoxb" + "-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOp\n",
    "stripe_live_key": "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc9Xy\n",
    "openai_api_key": "sk" + "-proj-" + "a1b2c3d4e5f6g7h8i9j0" + "T3Blbk" + "FJ" + "k1l2m3n4o5p6q7r8s9t0\n",
    "anthropic_api_key": "sk" + "-ant-api03-" + "A1b2_C3d4-" * 9 + "\n",
    "google_api_key": "AI" + "za" + "SyD3x9Kq2LmN8pQ7rS6tU5vW4xY3zA2bC1d\n",
    "npm_token": "//registry.npmjs.org/:_authToken=" + "npm" + "_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\n",
    "pypi_token": "password = " + "pypi" + "-AgEIcHlwaS5vcmc" + "CJDk4ZWQ1NzBhLTdhZDItNDk2Yi1hNWQ0LTQ3" * 2 + "\n",
}


@pytest.mark.parametrize("name", [
    "credentials", ".aws/credentials", ".git-credentials", ".pypirc", "_netrc", ".pgpass", ".dockercfg",
    "service-account.json", "service-account-prod.json", "service_account_key.json", ".env.production",
    ".envrc", ".env_staging", "id_xmss", "deploy.ppk", "Credentials",
])
def test_more_credential_files_look_secret(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", [
    "id_to_label.json", "idx_map.py", "credentials.yaml", "service.json", "account.json", "environment.yml",
    "env.py", "netrc.md", "keyboard.py",
])
def test_ordinary_files_stay_ordinary(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_each_credential_shape_is_recognised_at_its_line(kind: str) -> None:
    text = "# settings\nname: demo\n" + TOKENS[kind] + "steps: 3\n"
    finding = scan_content(text.encode())
    assert finding is not None, kind
    assert (finding.kind, finding.line) == (kind, 3)
    assert finding.describe().startswith("line 3 holds what looks like ")


def test_a_finding_never_repeats_the_secret() -> None:
    finding = scan_content(TOKENS["aws_access_key_id"].encode())
    assert finding is not None and AWS_ID not in repr(finding) and AWS_ID[4:] not in finding.describe()


@pytest.mark.parametrize("text", [
    # source code that names a PEM header, with no key material after it
    'if line.startswith("-----BEGIN RSA ' + 'PRIVATE KEY-----"):\n    return parse_rsa_key(line)\n',
    # AWS's documentation placeholder
    "aws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE\n",
    # identifiers and ordinary ML text that share a prefix with a token shape
    "hf_" + "load_dataset_from_the_hub_in_place = 1\n",
    "hf_" + "tokenizerconfigurationloadermodule = 2\n",
    "task-" + "sk-" + "learn-pipeline\n",
    "ghp_" + "short\n",
    "MAKIA" + "Z7Q4XW2MNB5KPL3R is a word, not a key id\n",
    '{"text": "The quick brown fox", "label": 1}\n' * 100,
    "AKIA" + "Z7Q4XW2MNB5KPL3RX is too long\n",
])
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert scan_content(text.encode()) is None


def test_binary_data_is_not_scanned() -> None:
    assert scan_content(b"\x00\x01weights" + TOKENS["aws_access_key_id"].encode()) is None


def test_only_the_first_mebibytes_are_scanned() -> None:
    filler = b"x = 1\n" * (MAX_SCAN_BYTES // 6 + 1)
    assert scan_content(filler + TOKENS["private_key"].encode()) is None
    finding = scan_content(filler[:1024] + TOKENS["private_key"].encode())
    assert finding is not None and finding.line == 1024 // 6 + 1


def test_the_earliest_finding_is_reported() -> None:
    text = "a\n" + TOKENS["github_token"] + TOKENS["service_account_key"]
    finding = scan_content(text.encode())
    assert finding is not None and (finding.kind, finding.line) == ("github_token", 2)


def test_find_secret_reads_names_link_targets_and_contents(tmp_path: Path) -> None:
    key = tmp_path / "notes.txt"
    key.write_text("hello\n" + TOKENS["openssh_private_key"])
    plain = tmp_path / "plain.txt"
    plain.write_text("hello\n")
    (tmp_path / ".pypirc").write_text("[pypi]\n")
    os.symlink(".pypirc", tmp_path / "innocent.cfg")
    named = find_secret(".pypirc")
    assert named is not None and (named.kind, named.line) == ("name", 0) and "'.pypirc'" in named.describe()
    linked = find_secret("innocent.cfg", tmp_path / "innocent.cfg")
    assert linked is not None and linked.kind == "name" and ".pypirc" in linked.describe()
    found = find_secret("notes.txt", key)
    assert found is not None and (found.kind, found.line) == ("openssh_private_key", 2)
    assert find_secret("plain.txt", plain) is None
    assert find_secret("notes.txt") is None  # without a path only the name is judged


# ---- select_files on a real git repository -------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "lab"
    for rel, text in {
        "experiments/rl/config.yaml": "steps: 3\n",
        "experiments/rl/train.py": "import os\nKEY = os.environ['HF_TOKEN']\n",
        "experiments/rl/credentials": "[default]\naws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE\n",
        "experiments/rl/fixtures/test_key.txt": "fixture\n" + TOKENS["private_key"],
        "common/settings.py": "# deploy\n\n" + TOKENS["aws_access_key_id"],
        "configs/base.yaml": "lr: 0.1\n",
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    return root


def test_secret_names_and_contents_are_refused_with_their_reason(repo: Path) -> None:
    selection = select_files(repo, "experiments/rl")
    assert sorted(selection.files) == ["configs/base.yaml", "experiments/rl/config.yaml", "experiments/rl/train.py"]
    assert sorted(selection.refused) == ["common/settings.py", "experiments/rl/credentials",
                                         "experiments/rl/fixtures/test_key.txt"]
    why = {path: (f.kind, f.line) for path, f in selection.secrets.items()}
    assert why == {"common/settings.py": ("aws_access_key_id", 3), "experiments/rl/credentials": ("name", 0),
                   "experiments/rl/fixtures/test_key.txt": ("private_key", 2)}
    assert selection.allowed == []


def test_exact_paths_can_be_allowed_on_purpose(repo: Path) -> None:
    selection = select_files(repo, "experiments/rl", allow_secrets=[
        "experiments/rl/fixtures/test_key.txt", "experiments/rl/credentials", "experiments/rl/fixtures"])
    assert selection.refused == ["common/settings.py"]
    assert sorted(selection.allowed) == ["experiments/rl/credentials", "experiments/rl/fixtures/test_key.txt"]
    assert set(selection.allowed) <= set(selection.files)


def test_a_link_to_a_file_holding_a_key_is_refused(repo: Path) -> None:
    os.symlink("../../common/settings.py", repo / "experiments/rl/settings_link.py")
    selection = select_files(repo, "experiments/rl")
    assert selection.secrets["experiments/rl/settings_link.py"].kind == "aws_access_key_id"
