"""Uploads are authenticated before any of the body is read, then spooled to disk within the size limit.

In process for the order of operations (a body generator records whether it was ever pulled); a real console
process for memory, read from /proc/<pid>/status (a bound on memory, never on time).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from starforge.console.services.jobs.bundles import bundle_path
from tests.integration.conftest import ConsoleProcess, make_console
from tests.integration.helpers import admitted, bundle, spec_for, submit
from tests.integration.test_hostile_parsing import InProcessConsole, build_console

MIB = 1024 * 1024
UPLOADS = [("/api/jobs", {"Content-Type": "application/gzip", "X-Forge-Meta": "{}"}),
           ("/api/plugins/publish", {"Content-Type": "application/gzip"})]


class CountingBody:
    """A request body of `chunks` chunks of 1 MiB that records how many chunks the server pulled."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks
        self.pulled = 0

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(self.chunks):
            self.pulled += 1
            yield b"\0" * MIB


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessConsole]:
    built = build_console(tmp_path_factory.mktemp("hostile-uploads") / "state", max_bundle_bytes=2 * MIB)
    yield built
    built.app.state.runtime.db.dispose()


@pytest.mark.parametrize(("path", "headers"), UPLOADS, ids=[u[0] for u in UPLOADS])
@pytest.mark.parametrize("token", [None, "sfp_not-a-real-token"], ids=["anonymous", "bad-token"])
def test_upload_without_valid_credentials_is_a_401_before_the_body_is_read(
    console: InProcessConsole, path: str, headers: dict[str, str], token: str | None
) -> None:
    body = CountingBody(8)
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    with console.client(None) as client:
        response = client.post(path, content=iter(body), headers={**headers, **auth})
    assert response.status_code == 401, response.text
    assert response.json()["detail"] and response.headers["www-authenticate"] == "Bearer"
    assert body.pulled == 0


def test_upload_over_the_limit_is_a_413_with_a_detail(console: InProcessConsole) -> None:
    body = CountingBody(3)  # the console above is configured with max_bundle_bytes = 2 MiB
    with console.client() as client:
        response = client.post("/api/jobs", content=iter(body), headers=UPLOADS[0][1])
    assert response.status_code == 413, response.text
    assert str(2 * MIB) in response.json()["detail"]


def test_spooled_bundle_reaches_admission_intact(console: InProcessConsole) -> None:
    blob = random.Random(3).randbytes(300_000).hex()  # ~300 KB gzipped: past what is kept in memory, so spooled
    data = bundle({"experiments/toy/config.yaml": "grpo:\n  max_num_steps: 5\n", "experiments/toy/blob.bin": blob})
    assert len(data) > 256 * 1024
    with console.client() as client:
        response = submit(client, spec_for(client, series="h200", gpus=8), data=data)
        job = client.get("/api/job", params={"id": admitted(response, "pending")}).json()
    stored = bundle_path(console.state_dir, hashlib.sha256(data).hexdigest())
    assert stored.read_bytes() == data and job["status"] == "pending"
    assert list((console.state_dir / "uploads").iterdir()) == []  # the spool file is gone with the request


def test_multipart_submission_is_parsed_from_the_spool(console: InProcessConsole) -> None:
    data = bundle()
    with console.client() as client:
        spec = spec_for(client, series="h200", gpus=8)
        response = client.post("/api/jobs", data={"spec": json.dumps(spec), "profile": "h200"},
                               files={"bundle": ("bundle.tar.gz", data, "application/gzip")})
    admitted(response, "pending")  # h200 has no capacity here
    assert bundle_path(console.state_dir, hashlib.sha256(data).hexdigest()).is_file()


class MultipartBody:
    """A multipart body whose part `name` (a file part) holds `chunks` MiB, streamed; records the chunks pulled."""

    def __init__(self, name: str, chunks: int, before: bytes = b"") -> None:
        self.head = before + (f'--b\r\nContent-Disposition: form-data; name="{name}"; filename="{name}"\r\n'
                              "Content-Type: application/octet-stream\r\n\r\n").encode()
        self.chunks = chunks
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self.pulled += 1
        yield self.head
        for _ in range(self.chunks):
            self.pulled += 1
            yield b"{" * MIB
        self.pulled += 1
        yield b"\r\n--b--\r\n"


def _post_streamed(console: InProcessConsole, path: str, body: MultipartBody, role: str) -> httpx.Response:
    """POST `body` to the in-process app over httpx's ASGI transport, which hands the body over only as the app
    reads it (the test client reads it whole first), so `body.pulled` shows how much the console consumed."""
    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=console.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.post(path, content=body, headers={
                **MULTIPART, "Authorization": f"Bearer {console.tokens[role]}"})

    return anyio.run(post)


MULTIPART = {"Content-Type": "multipart/form-data; boundary=b"}
SPEC_PART = b'--b\r\nContent-Disposition: form-data; name="spec"\r\n\r\n{}\r\n'


@pytest.mark.parametrize(("path", "name", "limit"), [("/api/jobs", "spec", MIB), ("/api/sweeps", "sweep", 4 * MIB),
                                                     ("/api/jobs", "bundle", 2 * MIB), ("/api/post", "spec", MIB)])
def test_a_multipart_part_over_its_limit_is_a_413_before_the_rest_is_read(
    console: InProcessConsole, path: str, name: str, limit: int
) -> None:
    body = MultipartBody(name, 8, before=SPEC_PART if name == "bundle" else b"")  # 8 MiB: far past any part limit
    response = _post_streamed(console, path, body, "operator")
    assert response.status_code == 413, response.text
    problem = response.json()["problems"][0]
    assert (problem["field"], problem["code"], problem["data"]) == (name, "part_too_large", {"limit": limit})
    assert str(limit) in response.json()["detail"] and problem["hint"]
    assert body.pulled < 2 + limit // MIB + 2  # refused at the first byte past the limit: the rest is never read
    uploads = console.state_dir / "uploads"
    assert not uploads.exists() or list(uploads.iterdir()) == []  # no temporary file left behind


@pytest.mark.parametrize("path", ["/api/jobs", "/api/sweeps", "/api/post"])
def test_a_viewer_s_multipart_upload_is_refused_before_any_part_is_read(console: InProcessConsole, path: str) -> None:
    body = MultipartBody("sweep" if path == "/api/sweeps" else "spec", 4)
    response = _post_streamed(console, path, body, "viewer")
    assert response.status_code == 403, response.text
    assert "viewer" in response.json()["detail"]
    assert body.pulled == 0


def test_a_spooled_multipart_bundle_reaches_admission_and_leaves_no_file(console: InProcessConsole) -> None:
    blob = random.Random(5).randbytes(300_000).hex()  # past what a bundle part keeps in memory: written to a file
    data = bundle({"experiments/toy/config.yaml": "grpo:\n  max_num_steps: 5\n", "experiments/toy/blob.bin": blob})
    assert len(data) > 256 * 1024
    with console.client() as client:
        spec = spec_for(client, series="h200", gpus=8)
        response = client.post("/api/jobs", data={"spec": json.dumps(spec), "profile": "h200"},
                               files={"bundle": ("bundle.tar.gz", data, "application/gzip")})
    admitted(response, "pending")  # h200 has no capacity here
    assert bundle_path(console.state_dir, hashlib.sha256(data).hexdigest()).read_bytes() == data
    assert list((console.state_dir / "uploads").iterdir()) == []


def _reset_peak(pid: int) -> dict[str, int]:
    """Reset the process's peak RSS (VmHWM) to its current RSS, and return both, in KiB."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return _memory_kib(pid)


def _memory_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


@pytest.fixture(scope="module")
def real_console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    process = make_console(tmp_path_factory, "sqlite", config={"capacity": {"cpu": 1}, "max_bundle_bytes": 48 * MIB})
    process.start()
    yield process
    process.stop()


def _post(client: httpx.Client, megabytes: int, headers: dict[str, str]) -> httpx.Response:
    """POST /api/jobs with a body of `megabytes` MiB streamed from a generator (never held by the test)."""
    return client.post("/api/jobs", content=iter(CountingBody(megabytes)),
                       headers={"Content-Type": "application/gzip", "X-Forge-Meta": "{}", **headers})


def _growth(pid: int, before: dict[str, int]) -> tuple[int, int]:
    after = _memory_kib(pid)
    print(f"console memory (KiB): before {before}, after {after}")
    return after["VmHWM"] - before["VmHWM"], after["VmRSS"] - before["VmRSS"]  # the peak, and what is left


def test_anonymous_large_uploads_leave_the_console_memory_bounded(real_console: ConsoleProcess) -> None:
    assert real_console.proc is not None
    with httpx.Client(base_url=real_console.url, timeout=120) as client:
        _post(client, 0, {})  # warm up the request path
        before = _reset_peak(real_console.proc.pid)
        for _ in range(3):
            response = _post(client, 64, {})
            assert response.status_code == 401, response.text
            assert "authentication required" in response.json()["detail"]
    peak, left = _growth(real_console.proc.pid, before)
    assert peak < 50 * 1024 and left < 50 * 1024


def test_authenticated_uploads_are_spooled_not_buffered(real_console: ConsoleProcess) -> None:
    assert real_console.proc is not None
    auth = {"Authorization": f"Bearer {real_console.token_for('uploader')}"}
    with httpx.Client(base_url=real_console.url, timeout=120) as client:
        _post(client, 1, auth)
        before = _reset_peak(real_console.proc.pid)
        for _ in range(2):  # under the 48 MiB limit: spooled to disk, then refused on its envelope
            refused = _post(client, 40, auth)
            assert refused.status_code == 400 and refused.json()["problems"][0]["field"].startswith("X-Forge-Meta")
        too_large = _post(client, 64, auth)
        assert too_large.status_code == 413 and str(48 * MIB) in too_large.json()["detail"]
    peak, left = _growth(real_console.proc.pid, before)
    assert peak < 50 * 1024 and left < 50 * 1024
