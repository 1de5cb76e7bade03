"""`GET /api/jobs/{ref}/render?format=kuberay` and `sf console render JOB --kuberay` on a real console: the owner
gets the RayJob manifest, another account a 404, an unknown format a 400 with its problem at `format`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from starforge.client import Console
from starforge.engines.kuberay_manifest import DEFAULT_IMAGE
from tests.integration import helpers
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.test_cli_account import sf, token_login

IMAGE = "nvcr.io/starforge/ray:2.49"  # inside the test console's image allowlist


def _submit(console: ConsoleProcess, token: str, image: str = IMAGE) -> str:
    exp = "experiments/toy"
    with console.client(token) as http:
        spec = helpers.spec_for(http, exp=exp)
    if image:
        spec["spec"]["framework"]["image"] = image
    with Console(console.url, token) as client:
        result = client.submit(spec, helpers.bundle({f"{exp}/config.yaml": "grpo:\n  max_num_steps: 5\n"}),
                               profile="cpu")
    assert result.job_id
    return result.job_id


def test_owner_renders_others_get_404_and_unknown_formats_400(console: ConsoleProcess, forge_home: Path) -> None:
    owner = unique("kr")
    token = token_login(console, forge_home, owner)
    job_id = _submit(console, token)
    with console.client(token) as http:
        answer = http.get(f"/api/jobs/{job_id}/render", params={"format": "kuberay"})
        assert answer.status_code == 200, answer.text
        doc = yaml.safe_load(answer.json()["manifest"])
        bad = http.get(f"/api/jobs/{job_id}/render", params={"format": "helm"})
    assert (doc["apiVersion"], doc["kind"], doc["metadata"]["name"]) == ("ray.io/v1", "RayJob", f"sf-{job_id}")
    assert doc["metadata"]["labels"]["starforge.dev/owner"] == owner
    (worker,) = doc["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert worker["template"]["spec"]["containers"][0]["image"] == IMAGE
    assert token not in answer.text
    assert bad.status_code == 400
    assert [(p["field"], p["code"]) for p in bad.json()["problems"]] == [("format", "invalid_request")]
    with console.client(console.token_for(unique("other"))) as http:
        assert http.get(f"/api/jobs/{job_id}/render", params={"format": "kuberay"}).status_code == 404

    done = sf("console", "render", job_id, "--kuberay")
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout) == doc
    as_json = sf("console", "render", job_id, "--kuberay", "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["manifest"] == answer.json()["manifest"]
    usage = sf("console", "render", job_id)
    assert usage.returncode == 2 and "--kuberay" in usage.stderr


def test_a_job_without_an_image_runs_in_the_default_one(console: ConsoleProcess) -> None:
    token = console.token_for(unique("kr"))
    job_id = _submit(console, token, image="")  # and the test console configures no kuberay.image
    with console.client(token) as http:
        answer = http.get(f"/api/jobs/{job_id}/render", params={"format": "kuberay"})
    assert answer.status_code == 200, answer.text
    head = yaml.safe_load(answer.json()["manifest"])["spec"]["rayClusterSpec"]["headGroupSpec"]
    assert head["template"]["spec"]["containers"][0]["image"] == DEFAULT_IMAGE
