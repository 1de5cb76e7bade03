"""Hostile bundles through `POST /api/jobs` on a real console: each is refused with a 4xx and a `detail`, nothing
is stored or written outside, and the console keeps serving."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import ConsoleProcess
from tests.integration.helpers import spec_for, submit
from tests.security.archives import MiB, gzip_bomb, hostile_bundles, tar_gz
from tests.security.consoles import Launcher, account, server_errors

MAX_FILES = 200
MAX_BYTES = 8 * MiB
CONFIG = {"capacity": {"cpu": 1}, "max_bundle_files": MAX_FILES, "max_bundle_bytes": MAX_BYTES,
          "image_allowlist": ["nvcr.io"]}
CASES = {  # case -> the problem code it must be refused with
    "dotdot to an absolute place": "bundle_unsafe",
    "dotdot inside the experiment": "bundle_unsafe",
    "absolute path": "bundle_unsafe",
    "symlink out, then a file through it": "bundle_unsafe",
    "relative symlink climbing out": "bundle_unsafe",
    "hardlink to /etc/passwd": "bundle_unsafe",
    "hardlink climbing out": "bundle_unsafe",
    "character device": "bundle_unsafe",
    "block device": "bundle_unsafe",
    "fifo": "bundle_unsafe",
    "gzip bomb (1 GiB of zeros)": "bundle_too_large",
    "too many files": "bundle_too_large",
}
DB_FILES = ("console.db", "console.db-wal", "console.db-shm")


@dataclass
class Target:
    """The console under attack, the attacker's client and spec, the escape directory and the bundles."""

    console: ConsoleProcess
    api: httpx.Client
    spec: dict[str, Any]
    escape: Path
    bundles: dict[str, bytes]


@pytest.fixture(scope="module")
def target(launch_module: Launcher, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    console = launch_module("sqlite", CONFIG)
    escape = tmp_path_factory.mktemp("escape-target")
    api = console.client(account(console, "mallory")[1])
    try:
        yield Target(console, api, spec_for(api, series="cpu", gpus=1), escape,
                     hostile_bundles(escape, max_files=MAX_FILES))
    finally:
        api.close()


def _files(root: Path) -> set[str]:
    """Return every file under `root` except the database's (which change with every request)."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name not in DB_FILES}


def _assert_refused(response: httpx.Response, status: int = 400) -> dict[str, Any]:
    body = response.json()
    assert response.status_code == status, (response.status_code, response.text[:400])
    assert isinstance(body.get("detail"), str) and body["detail"].strip(), body
    return dict(body)


def _assert_still_serving(t: Target) -> None:
    assert t.console.proc is not None and t.console.proc.poll() is None, "the console process died"
    assert httpx.get(f"{t.console.url}/api/version", timeout=10).status_code == 200


def test_the_cases_are_the_built_ones(target: Target) -> None:
    assert set(CASES) == set(target.bundles)
    assert all(len(data) < 2 * MiB for data in target.bundles.values())  # small on the wire, all of them


def test_the_bomb_is_a_real_archive() -> None:
    small = gzip.decompress(gzip_bomb(4 * MiB))
    with tarfile.open(fileobj=io.BytesIO(small)) as tar:
        [member] = tar.getmembers()
        assert member.size == 4 * MiB
        extracted = tar.extractfile(member)
        assert extracted is not None and extracted.read() == bytes(4 * MiB)
    assert len(gzip_bomb(1024 * MiB)) * 500 < 1024 * MiB  # an expansion ratio above 500


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_bundle_is_refused(target: Target, case: str) -> None:
    state = target.console.state_dir
    before = _files(state)
    response = submit(target.api, target.spec, data=target.bundles[case])
    body = _assert_refused(response)
    assert CASES[case] in {p["code"] for p in body["problems"] if p["field"] == "bundle"}, body
    assert body["detail"].startswith("The JobSpec was rejected\n- bundle: ")
    _assert_still_serving(target)
    assert _files(state) == before, "a refused bundle left files in the state directory"
    assert not any(target.escape.iterdir()), "something was written outside"
    assert not target.api.get("/api/jobs/mine", params={"limit": 200}).json()["jobs"]


def test_the_multipart_route_refuses_the_same_bundles(target: Target) -> None:
    spec_part: tuple[str | None, bytes, str] = (None, json.dumps(target.spec).encode(), "application/json")
    bundle_part = ("bundle.tar.gz", target.bundles["symlink out, then a file through it"], "application/gzip")
    files = {"spec": spec_part, "bundle": bundle_part}
    response = target.api.post("/api/jobs", files=files)
    body = _assert_refused(response)
    assert any(p["field"] == "bundle" for p in body["problems"])
    assert not any(target.escape.iterdir())


def test_a_body_above_the_limit_is_drained_and_refused_with_413(target: Target) -> None:
    response = submit(target.api, target.spec, data=os.urandom(MAX_BYTES + MiB))
    _assert_refused(response, 413)
    _assert_still_serving(target)


def test_after_the_attack_the_console_still_admits_a_good_bundle(target: Target) -> None:
    good = submit(target.api, spec_for(target.api, series="h200", gpus=8), data=tar_gz([]))
    assert good.status_code == 202, good.text
    admissions = target.api.get("/api/admissions/mine", params={"limit": 500}).json()["admissions"]
    verdicts = [a["verdict"] for a in admissions]
    assert verdicts[0] == "queued" and set(verdicts[1:]) <= {"rejected"}
    assert list((target.console.state_dir / "bundles").rglob("*.tar.gz")), "the good bundle was stored"
    assert not server_errors(target.console)
