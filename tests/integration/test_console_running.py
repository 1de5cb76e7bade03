"""Running jobs end to end on the local executor: training, metrics, checkpoints, init_from, follow-ups, corpora."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit

TEMPLATE = Path(__file__).resolve().parents[2] / "src/starforge/recipes/builtin/tinyrl/grpo/template/config.yaml"
TERMINAL = {"succeeded", "failed", "stopped"}


def _wait(api: httpx.Client, job: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = api.get("/api/job", params={"id": job}).json()
        if row["status"] in TERMINAL:
            return dict(row)
        time.sleep(0.2)
    raise AssertionError(f"job {job} did not finish: {row}")


def _toy(api: httpx.Client, name: str, **extra: Any) -> str:
    spec = spec_for(api, "tinyrl/grpo", exp=f"experiments/{name}", hyperparams={"max_num_steps": 40}, **extra)
    response = submit(api, spec, data=bundle({f"experiments/{name}/config.yaml": TEMPLATE.read_text()}))
    return admitted(response, "submitted")  # each test waits for its jobs: a slot is always free


@pytest.fixture(scope="module")
def api(console: ConsoleProcess) -> Any:
    client = console.client(console.token_for(unique("run")))
    yield client
    client.close()


def test_training_reward_rises_and_checkpoints_are_registered(api: httpx.Client) -> None:
    job = _toy(api, "first")
    row = _wait(api, job)
    assert row["status"] == "succeeded", row
    metrics = api.get(f"/api/jobs/{job}/metrics").json()
    rewards = [point[1] for point in metrics["series"]["train/reward"]]
    assert len(rewards) == 40
    assert sum(rewards[-10:]) / 10 > sum(rewards[:10]) / 10 + 0.2
    artifacts = api.get(f"/api/jobs/{job}/artifacts").json()["artifacts"]
    steps = sorted(a["step"] for a in artifacts if a["kind"] == "checkpoint")
    assert steps and steps[-1] == 40
    events = api.get("/api/job", params={"id": job}).json()["events"]
    transitions = [e["to"] for e in events if e["from"] != e["to"]]
    assert transitions == ["submitted", "running", "succeeded"]
    lifecycle = [e["reason"].split()[1] for e in events if e["reason"].startswith("lifecycle ")]
    assert lifecycle == ["starting", "running", "succeeded"]


def test_init_from_chains_a_second_run(console: ConsoleProcess, api: httpx.Client) -> None:
    first = _toy(api, "base")
    assert _wait(api, first)["status"] == "succeeded"
    second = _toy(api, "chained", model={"init_from": f"run/{first}/checkpoint"})
    assert _wait(api, second)["status"] == "succeeded"
    user = api.get("/api/whoami").json()["username"]
    plan = json.loads((console.state_dir / "runs" / user / "chained" / second / "work/.starforge/launch.json").read_text())
    checkpoint = plan["env"]["FORGE_INIT_FROM"]
    if console.sandboxed:
        assert checkpoint == "/forge/inputs/init_from"  # the checkpoint is mounted read-only in the job's sandbox
        assert str(console.state_dir) not in json.dumps(plan)  # nothing in the plan names the console's state
    else:
        assert checkpoint.endswith("checkpoints/step_40")  # the latest checkpoint of the first run
    assert {"path": "policy.init_from", "value": checkpoint} in plan["config"]["overrides"]  # the recipe's key
    rewards = [p[1] for p in api.get(f"/api/jobs/{second}/metrics").json()["series"]["train/reward"]]
    assert rewards[0] > 0.5, rewards[:5]  # started from the first run's weights
    foreign = spec_for(api, "tinyrl/grpo", model={"init_from": "run/r-0000000000/checkpoint"})
    assert submit(api, foreign).json()["problems"][0]["field"] == "spec.model.init_from"


def test_on_success_export_creates_a_linked_follow_up(api: httpx.Client) -> None:
    job = _toy(api, "exported", lifecycle={"on_success": ["export"]})
    assert _wait(api, job)["status"] == "succeeded"
    deadline = time.monotonic() + 60
    child = None
    while time.monotonic() < deadline:
        rows = api.get("/api/jobs/mine", params={"limit": 50}).json()["jobs"]
        child = next((r for r in rows if r.get("parent") == job), None)
        if child and child["status"] in TERMINAL:
            break
        time.sleep(0.3)
    assert child is not None and child["action"] == "export" and child["status"] == "succeeded", child
    parent = next(r for r in api.get("/api/jobs/mine", params={"limit": 50}).json()["jobs"] if r["job_ref"] == job)
    assert parent["pipeline"] == {"state": "done", "steps": [{"action": "export", "job_ref": child["job_ref"],
                                                              "status": "SUCCEEDED"}]}
    exports = api.get(f"/api/jobs/{child['job_ref']}/artifacts").json()["artifacts"]
    assert any(a["kind"] == "hf_export" for a in exports)


def test_corpus_is_mounted_read_only_with_docs_dir(console: ConsoleProcess, api: httpx.Client, tmp_path: Path) -> None:
    owner = api.get("/api/whoami").json()["username"]
    corpus = tmp_path / "handbook"
    corpus.mkdir()
    (corpus / "guide.md").write_text("rule 1: be kind\n")
    console.sf("corpus", "add", f"{owner}/handbook@v1", str(corpus), check=True)
    script = (
        'echo "docs=$DOCS_DIR"\n'
        'cat "$DOCS_DIR/guide.md"\n'
        'if touch "$DOCS_DIR/new" 2>/dev/null && [ "$(id -u)" != 0 ]; then echo WRITABLE; else echo read-only; fi\n'
        'test -w "$DOCS_DIR/guide.md" && [ "$(id -u)" != 0 ] && echo WRITABLE-FILE || echo file-read-only\n'
    )
    spec = spec_for(api, "custom/custom", exp="experiments/reader", data={"corpus": f"{owner}/handbook@v1"})
    spec["spec"]["framework"]["image"] = "nvcr.io/team/t:1"
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/p"
    job = submit(api, spec, data=bundle({"experiments/reader/train.sh": script})).json()["job_id"]
    assert _wait(api, job)["status"] == "succeeded"
    text = httpx.get(f"{console.url}/api/job/logs/stream", params={"id": job, "tail": 0}, headers=api.headers,
                     timeout=30).text
    assert "rule 1: be kind" in text and "WRITABLE" not in text
    assert (corpus / "guide.md").read_text() == "rule 1: be kind\n"  # the registered original is untouched


def test_an_exhausted_daily_budget_refuses_new_submissions(console: ConsoleProcess) -> None:
    name = unique("budget")
    api = console.client(console.token_for(name))
    with console.client(console.admin_token) as admin:  # 36 s a day; a job reserves (and may run) all of it
        assert admin.post("/api/admin/quotas", json={"username": name, "daily_gpu_hours": 0.01}).status_code == 200
    job = _toy(api, "spender")  # about a second on one slot: what is left no longer holds a whole day's budget
    assert _wait(api, job)["status"] == "succeeded"
    refused = submit(api, spec_for(api, "tinyrl/grpo"))
    assert refused.status_code == 400
    problem = refused.json()["problems"][0]
    assert (problem["field"], problem["code"]) == ("quota", "quota_exhausted")
    assert api.get("/api/usage/mine").json()["usage"]["gpu_hours_total"] > 0
    api.close()
