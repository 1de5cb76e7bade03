"""Datasets and models through the real `sf` and a real console: push (file, folder, immutable versions, hostile
archives), who sees what, submit and validate flags filling the spec, admission of cluster-path models under
`model_roots`, and a sandboxed job that reads its dataset and cannot write it."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import helpers
from tests.integration.conftest import DEFAULT_CONFIG, SF, ConsoleProcess, make_console, unique
from tests.integration.test_cli_account import sf, token_login


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    (root / "tiny").mkdir()
    (root / "tiny" / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    root.chmod(0o755)
    return root


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory, models: Path) -> Iterator[ConsoleProcess]:
    """A console whose operator serves base models from `models` (model_roots); jobs sandboxed as by default."""
    proc = make_console(tmp_path_factory, "sqlite", config={**DEFAULT_CONFIG, "model_roots": [str(models)]})
    proc.start()
    yield proc
    proc.stop()


def _push(path: Path, target: str, *extra: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    return sf("dataset", "push", str(path), target, "--json", *extra, home=home)


def _tar(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def _member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = "") -> tuple[tarfile.TarInfo,
                                                                                                     bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, len(data), link
    return info, data


def test_push_a_file_and_a_folder_with_immutable_versions(console: ConsoleProcess, forge_home: Path,
                                                          tmp_path: Path) -> None:
    user = unique("pusher")
    token_login(console, forge_home, user)
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "hello"}\n', encoding="utf-8")
    done = _push(data, "chat@v1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"ref": f"{user}/chat@v1"}
    assert (console.state_dir / "datasets" / user / "chat" / "v1" / "train.jsonl").read_text() == '{"text": "hello"}\n'
    one = sf("dataset", "push", str(data), "single@v1")
    assert one.returncode == 0 and "(1 file, " in one.stderr, one.stderr

    folder = tmp_path / "pairs"
    (folder / "split").mkdir(parents=True)
    (folder / "train.jsonl").write_text("a\n", encoding="utf-8")
    (folder / "split" / "val.jsonl").write_text("b\n", encoding="utf-8")
    human = sf("dataset", "push", str(folder), "pairs@2024-01")
    assert human.returncode == 0, human.stderr
    assert human.stdout.strip() == f"{user}/pairs@2024-01" and "2 files" in human.stderr
    stored = console.state_dir / "datasets" / user / "pairs" / "2024-01"
    assert sorted(p.relative_to(stored).as_posix() for p in stored.rglob("*") if p.is_file()) == [
        "split/val.jsonl", "train.jsonl"]

    again = _push(data, "chat@v1")
    refusal = json.loads(again.stdout)
    assert again.returncode == 1 and refusal["ok"] is False
    assert "already exists" in refusal["problems"][0]["message"] and "immutable" in refusal["problems"][0]["message"]
    human_again = sf("dataset", "push", str(data), "chat@v1")
    assert human_again.returncode == 1 and "already exists" in human_again.stderr, human_again.stderr
    assert (console.state_dir / "datasets" / user / "chat" / "v1" / "train.jsonl").exists()

    listed = json.loads(sf("dataset", "ls", "--json").stdout)["datasets"]
    mine = {row["id"]: row for row in listed}
    assert mine[f"{user}/chat"]["versions"] == ["v1"] and mine[f"{user}/chat"]["files"] == 1
    assert mine[f"{user}/pairs"]["total_bytes"] == 4 and mine[f"{user}/pairs"]["visibility"] == "private"


def test_users_list_only_the_datasets_they_may_read(console: ConsoleProcess, forge_home: Path,
                                                     tmp_path: Path) -> None:
    owner, other = unique("owner"), unique("other")
    owner_home = tmp_path / "owner"
    token_login(console, owner_home, owner)
    data = tmp_path / "d.txt"
    data.write_text("x\n", encoding="utf-8")
    assert _push(data, "secret@v1", home=owner_home).returncode == 0
    assert _push(data, "shared@v1", "--public", home=owner_home).returncode == 0
    foreign = _push(data, f"{other}/mine@v1", home=owner_home)
    assert foreign.returncode == 1 and "own namespace" in foreign.stderr

    other_token = token_login(console, forge_home, other)
    seen = {row["id"] for row in json.loads(sf("dataset", "ls", "--json").stdout)["datasets"]}
    assert f"{owner}/shared" in seen and f"{owner}/secret" not in seen
    from starforge.client import Console, NotFound

    with Console(console.url, other_token) as client:
        shown = client.dataset(f"{owner}/shared@v1")
        assert (shown["id"], shown["version"], shown["files"], shown["versions"]) == (
            f"{owner}/shared", "v1", [{"name": "d.txt", "size": 2}], ["v1"])
        for hidden in (f"{owner}/secret", f"{owner}/shared@v9", f"{owner}/none"):
            with pytest.raises(NotFound):
                client.dataset(hidden)
    with console.client(other_token) as http:  # the folders stay the console machine's business
        items = http.get("/api/data/dataset").json()["items"]
        assert f"{owner}/shared" in {i["id"] for i in items} and all("path" not in i for i in items), items
        assert str(console.state_dir) not in json.dumps(items)
    with console.client(console.admin_token) as admin:  # who registers data by its folder, sees the folder
        registered = admin.get("/api/data/dataset").json()["items"]
        assert all(i["path"] for i in registered)
    assert sf("dataset", "push", str(data), "no-version").returncode == 2
    bad = sf("dataset", "push", str(data), "bad name@v1")
    assert bad.returncode == 1 and "name" in bad.stderr and "hint" in bad.stderr, bad.stderr


@pytest.mark.parametrize("members", [
    [_member("../escape.txt", b"x")],
    [_member("link", kind=tarfile.SYMTYPE, link="/etc/passwd")],
    [_member("dev", kind=tarfile.CHRTYPE)],
    [_member("/abs.txt", b"x")],
], ids=["traversal", "link-out", "device", "absolute"])
def test_a_hostile_archive_is_refused_and_leaves_nothing(console: ConsoleProcess,
                                                         members: list[tuple[tarfile.TarInfo, bytes]]) -> None:
    user = unique("hostile")
    with console.client(console.token_for(user)) as api:
        answer = api.post("/api/datasets/push", params={"name": "evil", "version": "v1"},
                          content=_tar(members), headers={"Content-Type": "application/gzip"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["problems"][0]["field"] == "dataset"
    assert not (console.state_dir / "datasets" / user).exists()
    assert list((console.state_dir / "datasets" / "_incoming").iterdir()) == []
    assert not (console.state_dir.parent / "escape.txt").exists()


# ---- a lab: submit --dry-run and validate with the model and data flags ---------------------------------------

@pytest.fixture
def lab(console: ConsoleProcess, forge_home: Path, tmp_path: Path) -> tuple[Path, str]:
    """A lab with a trl/sft experiment `sft`, logged in as a fresh user who pushed `tiny@v1`; returns (lab, ref)."""
    user = unique("sft")
    token_login(console, forge_home, user)
    data = tmp_path / "tiny"
    data.mkdir()
    (data / "train.jsonl").write_text('{"text": "hi"}\n', encoding="utf-8")
    (data / "val.jsonl").write_text('{"text": "ho"}\n', encoding="utf-8")
    pushed = _push(data, "tiny@v1")
    assert pushed.returncode == 0, pushed.stderr
    assert sf("init", str(tmp_path / "lab")).returncode == 0
    made = subprocess.run([SF, "new", "sft", "--recipe", "trl/sft"], cwd=tmp_path / "lab", capture_output=True,
                          text=True)
    assert made.returncode == 0, made.stderr
    return tmp_path / "lab", json.loads(pushed.stdout)["ref"]


def _in_lab(lab: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SF, *args], cwd=lab, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_validate_runs_the_recipe_gates_and_takes_the_submit_flags(lab: tuple[Path, str], models: Path) -> None:
    root, ref = lab
    bare = _in_lab(root, "validate", "sft", "--json")
    assert bare.returncode == 1, bare.stdout
    problems = {p["field"]: p for p in json.loads(bare.stdout)["problems"]}
    assert "--model" in problems["spec.model.base"]["hint"]
    assert "--train-dataset" in problems["spec.data.train.path"]["hint"]
    assert "--val-dataset" in problems["spec.data.validation.path"]["hint"]
    human = _in_lab(root, "validate", "sft")
    assert human.returncode == 1 and "not ready" in human.stderr and "--train-dataset" in human.stderr
    ready = _in_lab(root, "validate", "sft", "--model", str(models / "tiny"), "--train-dataset", f"{ref}:train.jsonl",
                    "--val-dataset", f"{ref}:val.jsonl", "--json")
    assert ready.returncode == 0, ready.stdout
    assert json.loads(ready.stdout)["ok"] is True
    assert json.loads(ready.stdout)["needs_gpu"] == ["bf16"]  # the template's bf16: true, refused on a CPU series
    human = _in_lab(root, "validate", "sft", "--model", str(models / "tiny"), "--train-dataset", ref,
                    "--val-dataset", ref)
    assert human.returncode == 0 and "needs a GPU: bf16=true" in human.stdout and "--set bf16=false" in human.stdout
    off = _in_lab(root, "validate", "sft", "--model", str(models / "tiny"), "--train-dataset", ref,
                  "--val-dataset", ref, "--set", "bf16=false", "--json")
    assert off.returncode == 0 and json.loads(off.stdout)["needs_gpu"] == [], off.stdout


def test_submit_dry_run_resolves_datasets_and_a_model_under_model_roots(lab: tuple[Path, str], models: Path,
                                                                         tmp_path: Path) -> None:
    root, ref = lab
    flags = ("--train-dataset", f"{ref}:train.jsonl", "--val-dataset", f"{ref}:val.jsonl", "--profile", "cpu:1",
             "--allow-dirty", "--dry-run", "--json")
    gpu_only = _in_lab(root, "submit", "sft", "--model", str(models / "tiny"), *flags)
    assert gpu_only.returncode == 1, gpu_only.stdout  # the template's bf16: true on the cpu series
    problems = json.loads(gpu_only.stdout)["problems"]
    assert [(p["field"], p["code"]) for p in problems] == [("spec.hyperparams.bf16", "needs_gpu")]
    assert "--set bf16=false" in problems[0]["hint"]
    human = _in_lab(root, "submit", "sft", "--model", str(models / "tiny"), *flags[:-1])
    assert human.returncode == 1 and "--set bf16=false" in human.stderr
    flags = (*flags, "--set", "bf16=false")
    admitted = _in_lab(root, "submit", "sft", "--model", str(models / "tiny"), *flags)
    assert admitted.returncode == 0, admitted.stdout + admitted.stderr
    spec = json.loads(admitted.stdout)["spec"]["spec"]
    assert spec["model"]["base"] == str(models / "tiny")
    assert spec["data"]["train"] == {"dataset": ref, "path": "train.jsonl"}
    assert spec["data"]["validation"] == {"dataset": ref, "path": "val.jsonl"}
    assert spec["hyperparams"]["bf16"] is False
    said = _in_lab(root, "submit", "sft", "--model", str(models / "tiny"), *flags[:-3], "--set", "bf16=false")
    assert said.returncode == 0 and "(1 CPU slot on cpu)" in said.stderr, said.stderr

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    refused = _in_lab(root, "submit", "sft", "--model", str(outside), *flags)
    assert refused.returncode == 1
    problems = json.loads(refused.stdout)["problems"]
    assert [(p["field"], p["code"]) for p in problems] == [("spec.model.base", "model_path_forbidden")]

    unknown = _in_lab(root, "submit", "sft", "--model", "Qwen/Qwen3-0.6B", "--train-dataset", "nobody/none@v1",
                      *flags[2:])
    assert unknown.returncode == 1
    fields = {p["field"]: p for p in json.loads(unknown.stdout)["problems"]}
    assert "sf dataset ls" in fields["spec.data.train.dataset"]["hint"]


# ---- the job's view: read-only datasets and model -------------------------------------------------------------

_READER = """exec {python} - <<'EOF'
import json, os
found = {{}}
try_write = {try_write}
for key in ("FORGE_TRAIN_DATA", "FORGE_VAL_DATA", "FORGE_MODEL"):
    path = os.environ.get(key, "")
    found[key] = path
    target = path if os.path.isfile(path) else os.path.join(path, "probe.txt")
    try:
        found[key + ":read"] = open(path).read() if os.path.isfile(path) else sorted(os.listdir(path))
    except OSError as exc:
        found[key + ":read"] = repr(exc)
    if not try_write:
        continue
    try:
        with open(target, "a") as handle:
            handle.write("tampered")
        found[key + ":wrote"] = True
    except OSError:
        found[key + ":wrote"] = False
print("READER " + json.dumps(found), flush=True)
EOF
"""




def test_a_job_reads_its_datasets_and_model_and_cannot_write_them(console: ConsoleProcess, models: Path,
                                                                  tmp_path: Path) -> None:
    """Without bubblewrap (a bare dev machine) the job reads its inputs where they are and the writes are not
    tried; the sandbox (always present in CI) shows them read-only, at paths that do not name the host's."""
    user = unique("reader")
    token = console.token_for(user)
    data = tmp_path / "d"
    data.mkdir()
    (data / "train.jsonl").write_text("row-1\n", encoding="utf-8")
    from starforge.client import Console

    with Console(console.url, token) as client:
        ref = client.push_dataset(data, "reads", "v1")["ref"]
    with console.client(token) as api:
        spec = helpers.spec_for(api, "custom/custom", exp="experiments/reader", series="cpu", gpus=1,
                                model={"base": str(models / "tiny")},
                                data={"train": {"dataset": ref, "path": "train.jsonl"}, "validation": {"dataset": ref}})
        spec["spec"]["framework"]["image"] = "nvcr.io/team/trainer:1.0"
        spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
        script = _READER.format(python=sys.executable, try_write=console.sandboxed)
        answer = helpers.submit(api, spec, data=helpers.bundle({"experiments/reader/train.sh": script}))
        job = helpers.admitted(answer, "submitted")  # the module's only job
        row = helpers.wait_for_end(api, job)
    output = (console.state_dir / "runs" / user / "reader" / job / "logs" / "output.log").read_text(errors="replace")
    assert row["status"] == "succeeded", output[-3000:]
    found = json.loads(next(line for line in output.splitlines() if line.startswith("READER "))[7:])
    assert found["FORGE_TRAIN_DATA"].endswith("/train.jsonl") and found["FORGE_TRAIN_DATA:read"] == "row-1\n"
    assert found["FORGE_VAL_DATA:read"] == ["train.jsonl"]
    assert found["FORGE_MODEL:read"] == ["config.json"]
    if console.sandboxed:
        assert str(console.state_dir) not in found["FORGE_TRAIN_DATA"] and str(models) not in found["FORGE_MODEL"]
        assert (found["FORGE_TRAIN_DATA:wrote"], found["FORGE_VAL_DATA:wrote"], found["FORGE_MODEL:wrote"]) == (
            False, False, False)
    assert (console.state_dir / "datasets" / user / "reads" / "v1" / "train.jsonl").read_text() == "row-1\n"
    assert sorted(p.name for p in (models / "tiny").iterdir()) == ["config.json"]
