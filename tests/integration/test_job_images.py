"""Jobs run in their image on the local executor, pulled from the test registry of `scripts/services.sh up`.

A custom job sees a file only its image has, a tinyrl job trains inside the image, and the hostile probes (the
state folder, the databases, other runs and tokens, `/proc`, the machine's network) find nothing from inside it.
The image's digest is recorded with the job, and a job pinned to it runs the cached image; an image of a registry
outside the allowlist is refused at admission, and one that does not exist fails its job with the registry's
reason. The console runs as root (per-job uids). An operator pulls an image ahead with `sf console image pull`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import require_bubblewrap
from tests.integration import netprobe
from tests.integration.conftest import SF, ConsoleProcess, unique
from tests.integration.helpers import TERMINAL, admitted, bundle, spec_for, submit
from tests.integration.helpers import wait_for_status as wait
from tests.integration.image_jobs import (
    MARKER,
    check_finds_nothing_from_inside,
    check_sees_its_image,
    custom_job,
    images_config,
    output,
    registry_image,
)

TEMPLATE = Path(__file__).resolve().parents[2] / "src/starforge/recipes/builtin/tinyrl/grpo/template/config.yaml"


@pytest.fixture(scope="module")
def image() -> str:
    return registry_image()


@pytest.fixture(scope="module")
def console(image: str) -> Iterator[ConsoleProcess]:
    """A root console that runs jobs sandboxed, in their images, pulled from the loopback registry."""
    require_bubblewrap()
    if os.getuid() != 0:
        pytest.skip("the image suites run the console as root (per-job uids)")
    base = Path(tempfile.mkdtemp(prefix="sf-images-"))
    base.chmod(0o755)
    (base / "state").mkdir()
    config = {"capacity": {"cpu": 3}, "stop_grace_seconds": 2,
              "executors": {"local": {"sandbox": "on", "memory_per_slot": "1GiB"}},
              "runtimes": {"cache_dir": str(base / "runtimes"), "hub_cache": str(base / "hub")},
              **images_config(image, base / "images")}
    proc = ConsoleProcess(base / "state", config=config)
    proc.start()
    yield proc
    proc.stop()
    shutil.rmtree(base, ignore_errors=True)


def test_a_custom_job_sees_its_image_and_a_job_pinned_to_its_digest_runs_the_cached_one(
        console: ConsoleProcess, image: str) -> None:
    check_sees_its_image(console, image)
    user = unique("pinned")
    with console.client(console.token_for(user)) as api:
        first = custom_job(api, "marker", image, {}, "true\n")
        digest = wait(api, first, TERMINAL)["image_digest"]
        pinned = custom_job(api, "marker", f"{image.rsplit(':', 1)[0]}@{digest}", {}, "cat /etc/starforge-test-image\n")
        assert wait(api, pinned, TERMINAL)["status"] == "succeeded"
        log = output(console, user, "marker", pinned)
        assert MARKER in log and "already in the image cache" in log, log[-2000:]


def test_a_tinyrl_job_trains_inside_the_image(console: ConsoleProcess, image: str) -> None:
    user = unique("imagerl")
    with console.client(console.token_for(user)) as api:
        spec = spec_for(api, "tinyrl/grpo", exp="experiments/toy", hyperparams={"max_num_steps": 4})
        spec["spec"]["framework"]["image"] = image
        job = admitted(submit(api, spec, data=bundle({"experiments/toy/config.yaml": TEMPLATE.read_text()})),
                       "submitted")
        row = wait(api, job, TERMINAL)
        log = output(console, user, "toy", job)
        assert row["status"] == "succeeded", log[-3000:]
        assert row["image_digest"].startswith("sha256:")
        assert f"[image] resolving {image}" in log and "step" in log  # it trained in the image it waited for


def test_a_hostile_job_finds_nothing_from_inside_its_image(console: ConsoleProcess, image: str) -> None:
    check_finds_nothing_from_inside(console, image)


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
        listed = api.get("/api/jobs/mine", params={"all": "false"})
        assert listed.status_code == 200 and listed.json()["jobs"] == [], listed.text  # nothing half-written


def test_an_image_that_does_not_exist_fails_its_job_with_the_registry_s_reason(
        console: ConsoleProcess, image: str) -> None:
    with console.client(console.token_for(unique("missing"))) as api:
        job = custom_job(api, "gone", f"{image.rsplit(':', 1)[0]}:no-such-tag", {}, "true\n")
        row = wait(api, job, TERMINAL)
        assert row["status"] == "failed", row
        message = row["message"]
        assert "could not be pulled" in message and "no-such-tag" in message, message
        assert "manifest unknown" in message.lower() or "not found" in message.lower(), message


def test_an_operator_pulls_an_image_ahead_and_lists_the_cache(image: str, tmp_path: Path) -> None:
    config = tmp_path / "console.yaml"
    config.write_text(yaml.safe_dump(images_config(image, tmp_path / "images")))
    common = ["--config", str(config), "--state-dir", str(tmp_path / "state")]

    def sf(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SF, "console", "image", *args, *common], capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)

    pulled = sf("pull", image, "--json")
    assert pulled.returncode == 0, pulled.stderr
    record = json.loads(pulled.stdout)
    assert record["digest"].startswith("sha256:") and (Path(record["root"]) / "etc" / "starforge-test-image").is_file()
    assert "resolving" in pulled.stderr  # the pull's progress on the operator's terminal
    listed = json.loads(sf("ls", "--json").stdout)
    assert [(i["reference"], i["digest"]) for i in listed["images"]] == [(image, record["digest"])]
    outside = sf("pull", "registry.example.com/team/trainer:1.0")
    assert outside.returncode == 1 and "image_allowlist" in outside.stderr
    missing = sf("pull", f"{image.rsplit(':', 1)[0]}:no-such-tag")
    assert missing.returncode == 1 and "manifest unknown" in missing.stderr and "time=" not in missing.stderr
