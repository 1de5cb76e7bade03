"""What every engine's image suite checks through a console whose jobs run in their image (the test registry of
`scripts/services.sh up`): the job sees its image and keeps its digest, and a hostile job finds nothing from inside
its image. Shared by the local executor's suite and the cluster engines' suites."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import require_service
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import TERMINAL, admitted, bundle, spec_for, submit
from tests.integration.helpers import wait_for_status as wait

PROBE = Path(__file__).with_name("isolation_probe.py").read_text()
MARKER = "starforge test image"  # /etc/starforge-test-image, written into the test image by services.sh


def registry_image() -> str:
    """Return the test image (host:port/name:tag) in the loopback registry; skip loudly (fail under CI) without it."""
    return require_service("the test registry", "STARFORGE_TEST_IMAGE", "run `scripts/services.sh up`")


def images_config(image: str, cache_dir: Path) -> dict[str, Any]:
    """Return the console configuration keys that allow the test registry and run jobs in their images."""
    registry = image.split("/", 1)[0]
    return {"image_allowlist": [registry, "nvcr.io"],
            "images": {"run": True, "cache_dir": str(cache_dir), "registries": {registry: {"tls_verify": False}}}}


def custom_job(api: httpx.Client, name: str, image: str, files: dict[str, str], script: str) -> str:
    """Submit a custom job running `script` in `image` with `files` in its experiment; return its id."""
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}", series="cpu", gpus=1)
    spec["spec"]["framework"]["image"] = image
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
    files = {**{f"experiments/{name}/{k}": v for k, v in files.items()}, f"experiments/{name}/train.sh": script}
    return admitted(submit(api, spec, data=bundle(files)), "submitted")


def output(console: ConsoleProcess, user: str, name: str, job: str) -> str:
    """Return the job's log as its run folder holds it."""
    return (console.state_dir / "runs" / user / name / job / "logs" / "output.log").read_text(errors="replace")


def check_sees_its_image(console: ConsoleProcess, image: str) -> None:
    """A custom job prints a file only its image has, and its image's digest is recorded with it."""
    user = unique("imaged")
    with console.client(console.token_for(user)) as api:
        job = custom_job(api, "marker", image, {}, "cat /etc/starforge-test-image\ncat /etc/os-release\n")
        row = wait(api, job, TERMINAL)
        log = output(console, user, "marker", job)
        assert row["status"] == "succeeded", log[-3000:]
        assert MARKER in log and "bookworm" in log
        assert f"[image] resolving {image}" in log  # the pull's progress is in the job's log
        shown = api.get("/api/job", params={"id": job}).json()
        assert shown["image"] == image
        assert shown["image_digest"].startswith("sha256:") and len(shown["image_digest"]) == 71


def check_finds_nothing_from_inside(console: ConsoleProcess, image: str) -> None:
    """A hostile job in `image` (it sees the image's marker, and its digest is kept) finds nothing of the console,
    of another user's running job, or of their tokens."""
    victim_user, attacker_user = unique("victim"), unique("attacker")
    victim = console.client(console.token_for(victim_user))
    attacker = console.client(console.token_for(attacker_user))
    marker = f"planted-{uuid.uuid4().hex[:8]}"
    try:
        sleeper = custom_job(victim, "private", image, {"secret.txt": "victim data"}, "echo running\nsleep 120\n")
        wait(victim, sleeper, {"running"})
        probe = custom_job(attacker, "probe", image, {"probe.py": PROBE},
                           "cat /etc/starforge-test-image\n"
                           f"exec {sys.executable} experiments/probe/probe.py {console.state_dir} {marker}\n")
        row = wait(attacker, probe, TERMINAL)
        log = output(console, attacker_user, "probe", probe)
        assert row["status"] == "succeeded", log[-3000:]
        assert f"[image] resolving {image}" in log and MARKER in log  # it ran in its image
        assert row["image_digest"].startswith("sha256:")
        report = json.loads(next(line for line in log.splitlines() if line.startswith("PROBE "))[6:])
        for finding in ("state_visible", "walk_up", "databases", "other_runs", "tokens", "env_paths"):
            assert report[finding] == [], (finding, report[finding])
        assert len(report["pids"]) < 10, report["pids"]
        if os.getuid() == 0:
            assert report["uid"] not in (0, os.getuid())  # a per-job uid, not the console's
        assert list(console.state_dir.rglob(marker)) == []
        assert "victim data" not in log
    finally:
        victim.post("/api/job/stop", params={"id": sleeper})
        victim.close()
        attacker.close()
