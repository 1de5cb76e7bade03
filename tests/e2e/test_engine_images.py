"""Jobs run in their image on the cluster engines: the console pulls and unpacks it into its image cache (shared
storage, as the state folder), and each node's sandbox shows it as the job's root. On Slurm and on Ray, a custom job
prints a file only its image has, keeps the image's digest, and the hostile probes (the state folder, the databases, other
runs and tokens, `/proc`, the machine's network) find nothing from inside it.

The engines are the services of `scripts/services.sh up` (markers `slurm` and `ray`; skipped loudly without them,
failed under CI), with the test registry's image.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_service
from tests.e2e.test_engines import SLURM_SERIES, _slurm_env
from tests.integration import netprobe
from tests.integration.conftest import DEFAULT_CONFIG, ConsoleProcess, unique
from tests.integration.image_jobs import (
    check_finds_nothing_from_inside,
    images_config,
    registry_image,
)

ENGINES = [pytest.param("slurm", marks=pytest.mark.slurm), pytest.param("ray", marks=pytest.mark.ray)]


@pytest.fixture(scope="module", params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Iterator[tuple[str, ConsoleProcess, str]]:
    """A root console whose engine is Slurm (or Ray) and whose jobs run in their images."""
    if os.getuid() != 0:
        pytest.skip("the image suites run the console as root (per-job uids on the nodes)")
    name, image = request.param, registry_image()
    base = Path(tempfile.mkdtemp(prefix="sf-engine-images-"))
    base.chmod(0o755)
    (base / "state").mkdir()
    config: dict[str, Any] = {**DEFAULT_CONFIG, "stop_grace_seconds": 2, **images_config(image, base / "images")}
    env: dict[str, str] = {}
    args: tuple[str, ...] = ()
    if name == "slurm":
        env = _slurm_env()
        config["executors"] = {"slurm": {"series": SLURM_SERIES}}
        args = ("--executor", "slurm")
    else:
        address = require_service("Ray", "RAY_ADDRESS", "run `scripts/services.sh up`")
        args = ("--executor", "ray", "--ray-address", address)
    proc = ConsoleProcess(base / "state", config=config, extra_args=args)
    proc.env.update(env)
    proc.start()
    yield name, proc, image
    proc.stop()
    shutil.rmtree(base, ignore_errors=True)


def test_a_hostile_job_in_its_image_finds_nothing_on_the_engine(engine: tuple[str, ConsoleProcess, str]) -> None:
    """The probe job prints the image's marker (it runs in the image) and keeps its digest, and finds nothing."""
    _, console, image = engine
    check_finds_nothing_from_inside(console, image)


def test_a_job_in_its_image_reaches_no_service_of_the_machine_on_the_engine(
        engine: tuple[str, ConsoleProcess, str]) -> None:
    _, console, image = engine
    netprobe.probe_as(console, unique("imagenet"), image=image)
