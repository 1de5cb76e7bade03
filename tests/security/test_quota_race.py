"""A 500-way quota race on SQLite and PostgreSQL: an account allowed exactly 2 GPUs is admitted exactly 2 jobs,
the other 498 are queued with the quota as their reason, and no job is lost or doubled."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.integration.conftest import BACKENDS, unique
from tests.integration.helpers import spec_for
from tests.security.consoles import Launcher, account, server_errors
from tests.security.wire import renamed, submission

QUOTA_GPUS = 2
RACERS = 500
ACTIVE = {"submitted", "running"}  # the statuses that hold GPUs
# Capacity is ample and the background loops are off: the quota reservation is the only thing that can hold a job
# back, and admitted jobs stay `submitted` (they cannot run, finish and free quota while the race is on). A series
# without capacity would not do: the console checks capacity first, and a `pending` job holds no quota at all.
CONFIG = {"capacity": {"cpu": 1000}, "run_background": False}


async def _race(url: str, token: str, requests: list[tuple[dict[str, str], bytes]]) -> list[Any]:
    """Send every submission at once (one connection each, released together) and return answers or errors."""
    limits = httpx.Limits(max_connections=len(requests), max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}, limits=limits,
                                 timeout=httpx.Timeout(120, connect=60)) as client:
        start = asyncio.Event()

        async def one(headers: dict[str, str], body: bytes) -> httpx.Response:
            await start.wait()
            return await client.post("/api/jobs", content=body, headers=headers)

        tasks = [asyncio.create_task(one(h, b)) for h, b in requests]
        await asyncio.sleep(0)
        start.set()
        return list(await asyncio.gather(*tasks, return_exceptions=True))


@pytest.mark.parametrize("backend", BACKENDS)
def test_500_concurrent_submissions_admit_exactly_the_quota(launch: Launcher, backend: str) -> None:
    console = launch(backend, CONFIG)
    user, token = account(console, "racer")
    console.sf("quota", "set", user, "--gpus", str(QUOTA_GPUS), "--jobs", "0", check=True)
    with console.client(token) as api:
        assert api.get("/api/usage/mine").json()["quota"]["max_concurrent_gpus"] == QUOTA_GPUS
        spec = spec_for(api, series="cpu", gpus=1)
    requests = [submission(renamed(spec, f"race{i:03d}"), key=unique("race")) for i in range(RACERS)]

    answers = asyncio.run(_race(console.url, token, requests))

    errors = [repr(a) for a in answers if not isinstance(a, httpx.Response)]
    assert not errors, f"{len(errors)} submissions got no answer: {errors[:3]}"
    responses = [a for a in answers if isinstance(a, httpx.Response)]
    codes = Counter(r.status_code for r in responses)
    assert set(codes) <= {200, 202}, {c: n for c, n in codes.items()}
    bodies = [r.json() for r in responses]
    admitted = [b["job_id"] for r, b in zip(responses, bodies, strict=True) if r.status_code == 200]
    queued = [b for r, b in zip(responses, bodies, strict=True) if r.status_code == 202]
    assert len(admitted) == QUOTA_GPUS, f"{len(admitted)} admitted for a quota of {QUOTA_GPUS} GPUs"
    assert all(b["queued"] is True and b["status"] == "queued" and "quota" in b["message"] for b in queued)
    assert len({b["job_id"] for b in bodies}) == RACERS

    with console.client(token) as api:
        rows = api.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]
        holding = [r for r in rows if r["status"] in ACTIVE]
        assert len(rows) == RACERS and {r["job_ref"] for r in rows} == {b["job_id"] for b in bodies}
        assert sorted(r["job_ref"] for r in holding) == sorted(admitted)
        assert sum(r["requested_gpus"] for r in holding) == QUOTA_GPUS
        assert Counter(r["status"] for r in rows) == {"submitted": QUOTA_GPUS, "queued": RACERS - QUOTA_GPUS}
        usage = api.get("/api/usage/mine").json()["usage"]
        assert (usage["active_gpus"], usage["active_jobs"]) == (QUOTA_GPUS, QUOTA_GPUS)
        # every decision ever taken is audited: none admitted a third job at any moment of the race
        decisions = api.get("/api/admissions/mine", params={"limit": RACERS}).json()["admissions"]
        assert Counter(d["verdict"] for d in decisions) == {"accepted": QUOTA_GPUS, "queued": RACERS - QUOTA_GPUS}
    assert not server_errors(console)
