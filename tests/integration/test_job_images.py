"""Jobs run in their image on the local executor, pulled from the test registry of `scripts/services.sh up`.

A custom job sees a file only its image has, a tinyrl job trains inside the image, and the hostile probes (the
state folder, the databases, other runs and tokens, `/proc`, the machine's network) find nothing from inside it.
The image's digest is recorded with the job; an image of a registry outside the allowlist is refused at admission,
and one that does not exist fails its job with the registry's reason. The console runs as root (per-job uids).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import require_bubblewrap, require_service
from tests.integration import netprobe
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit

PROBE = Path(__file__).with_name("isolation_probe.py").read_text()
TEMPLATE = Path(__file__).resolve().parents[2] / "src/starforge/recipes/builtin/tinyrl/grpo/template/config.yaml"
TERMINAL = {"succeeded", "failed", "stopped"}
MARKER = "starforge test image"  # /etc/starforge-test-image, written into the test image by services.sh


@pytest.fixture(scope="module")
def image() -> str:
    """The test image (host:port/name:tag) in the loopback registry."""
    return require_service("the test registry", "STARFORGE_TEST_IMAGE", "run `scripts/services.sh up`")


@pytest.fixture(scope="module")
def console(image: str) -> Iterator[ConsoleProcess]:
    """A root console that runs jobs sandboxed, in their images, pulled from the loopback registry."""
    require_bubblewrap()
    if os.getuid() != 0:
        pytest.skip("the image suites run the console as root (per-job uids)")
    registry = image.split("/", 1)[0]
    base = Path(tempfile.mkdtemp(prefix="sf-images-"))
    base.chmod(0o755)
    (base / "state").mkdir()
    config = {"capacity": {"cpu": 3}, "image_allowlist": [registry, "nvcr.io"], "stop_grace_seconds": 2,
              "executors": {"local": {"sandbox": "on", "memory_per_slot": "1GiB"}},
              "runtimes": {"cache_dir": str(base / "runtimes"), "hub_cache": str(base / "hub")},
              "images": {"run": True, "cache_dir": str(base / "images"),
                         "registries": {registry: {"tls_verify": False}}}}
    proc = ConsoleProcess(base / "state", config=config)
    proc.start()
    yield proc
    proc.stop()
    shutil.rmtree(base, ignore_errors=True)


def _custom(api: httpx.Client, name: str, image: str, files: dict[str, str], script: str) -> str:
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}", series="cpu", gpus=1)
    spec["spec"]["framework"]["image"] = image
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
    files = {**{f"experiments/{name}/{k}": v for k, v in files.items()}, f"experiments/{name}/train.sh": script}
    return admitted(submit(api, spec, data=bundle(files)), "submitted")


def _wait(api: httpx.Client, job: str, statuses: set[str], timeout: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = dict(api.get("/api/job", params={"id": job}).json())
        if row["status"] in statuses:
            return row
        time.sleep(0.2)
    raise AssertionError(f"job {job} did not reach {statuses}")


def _output(console: ConsoleProcess, user: str, name: str, job: str) -> str:
    return (console.state_dir / "runs" / user / name / job / "logs" / "output.log").read_text(errors="replace")


def test_a_custom_job_sees_its_image_and_keeps_its_digest(console: ConsoleProcess, image: str) -> None:
    user = unique("imaged")
    with console.client(console.token_for(user)) as api:
        job = _custom(api, "marker", image, {}, "cat /etc/starforge-test-image\ncat /etc/os-release\n")
        row = _wait(api, job, TERMINAL)
        output = _output(console, user, "marker", job)
        assert row["status"] == "succeeded", output[-3000:]
        assert MARKER in output and "bookworm" in output
        assert "[image] pulling" in output  # the pull's progress is in the job's log
        shown = api.get("/api/job", params={"id": job}).json()
        assert shown["image"] == image
        assert shown["image_digest"].startswith("sha256:") and len(shown["image_digest"]) == 71
        again = _custom(api, "marker", f"{image.rsplit(':', 1)[0]}@{shown['image_digest']}", {},
                        "cat /etc/starforge-test-image\n")
        assert _wait(api, again, TERMINAL)["status"] == "succeeded"  # pinned by digest: the same cached image
        assert MARKER in _output(console, user, "marker", again)


def test_a_tinyrl_job_trains_inside_the_image(console: ConsoleProcess, image: str) -> None:
    user = unique("imagerl")
    with console.client(console.token_for(user)) as api:
        spec = spec_for(api, "tinyrl/grpo", exp="experiments/toy", hyperparams={"max_num_steps": 4})
        spec["spec"]["framework"]["image"] = image
        job = admitted(submit(api, spec, data=bundle({"experiments/toy/config.yaml": TEMPLATE.read_text()})),
                       "submitted")
        row = _wait(api, job, TERMINAL)
        output = _output(console, user, "toy", job)
        assert row["status"] == "succeeded", output[-3000:]
        shown = api.get("/api/job", params={"id": job}).json()
        assert shown["image_digest"].startswith("sha256:")
        assert f"[image] resolving {image}" in output and "step" in output  # it trained in the image it waited for


def test_a_hostile_job_finds_nothing_from_inside_its_image(console: ConsoleProcess, image: str) -> None:
    victim_user, attacker_user = unique("victim"), unique("attacker")
    victim = console.client(console.token_for(victim_user))
    attacker = console.client(console.token_for(attacker_user))
    marker = f"planted-{uuid.uuid4().hex[:8]}"
    try:
        sleeper = _custom(victim, "private", image, {"secret.txt": "victim data"}, "echo running\nsleep 120\n")
        _wait(victim, sleeper, {"running"})
        probe = _custom(attacker, "probe", image, {"probe.py": PROBE},
                        f"exec {sys.executable} experiments/probe/probe.py {console.state_dir} {marker}\n")
        row = _wait(attacker, probe, TERMINAL)
        output = _output(console, attacker_user, "probe", probe)
        assert row["status"] == "succeeded", output[-3000:]
        report = json.loads(next(line for line in output.splitlines() if line.startswith("PROBE "))[6:])
        for finding in ("state_visible", "walk_up", "databases", "other_runs", "tokens", "env_paths"):
            assert report[finding] == [], (finding, report[finding])
        assert len(report["pids"]) < 10, report["pids"]
        assert report["uid"] not in (0, os.getuid())
        assert list(console.state_dir.rglob(marker)) == []
        assert "victim data" not in output
    finally:
        victim.post("/api/job/stop", params={"id": sleeper})
        victim.close()
        attacker.close()


def test_a_job_in_an_image_reaches_no_service_of_the_machine(console: ConsoleProcess, image: str) -> None:
    netprobe.probe_as(console, unique("imagenet"), image=image)


def test_an_image_outside_the_allowlist_is_refused_at_admission(console: ConsoleProcess) -> None:
    with console.client(console.token_for(unique("outside"))) as api:
        spec = spec_for(api, "custom/custom", exp="experiments/x", series="cpu", gpus=1)
        spec["spec"]["framework"]["image"] = "registry.example.com/team/trainer:1.0"
        spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
        response = submit(api, spec, data=bundle({"experiments/x/train.sh": "true\n"}))
        assert response.status_code in (400, 422), response.text
        assert "spec.framework.image" in response.text and "allow" in response.text.lower()
        assert api.get("/api/jobs").json().get("jobs", []) == []  # nothing half-written


def test_an_image_that_does_not_exist_fails_its_job_with_the_registry_s_reason(
        console: ConsoleProcess, image: str) -> None:
    user = unique("missing")
    with console.client(console.token_for(user)) as api:
        job = _custom(api, "gone", f"{image.rsplit(':', 1)[0]}:no-such-tag", {}, "true\n")
        row = _wait(api, job, TERMINAL)
        assert row["status"] == "failed", row
        message = api.get("/api/job", params={"id": job}).json()["message"]
        assert "could not be pulled" in message and "no-such-tag" in message, message
        assert "manifest unknown" in message.lower() or "not found" in message.lower(), message
