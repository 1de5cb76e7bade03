"""The official sf client (starforge-core 0.3.56), unchanged and run as a black box: `sf serve start`, `sf serve ls`,
`sf serve extend` and `sf serve stop` against our console (its `/api/playground/*` shapes), and a refused start.

The client asks for one GPU unless told otherwise; a console with no GPU capacity (this one) serves it on the CPU,
and this console's CPU series has no free slot either (`capacity: {cpu: 0}`, `admission.unplaceable: queue`), so
its service waits in the queue and no model server is needed.
Assertions read the client's exit code, the values our console sent as they appear in its output (the service id,
the model, our refusal's text) and our console's state through `/api/services`; never the client's own wording.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.compat.conftest import OfficialUser, console_config, flat, make_user, output
from tests.integration.conftest import ConsoleProcess, make_console

RUN_ID = re.compile(r"\br-[0-9a-z]{10}\b")
MODEL = "hf-internal-testing/tiny-random-gpt2"


@pytest.fixture(scope="module")
def serving_console(tmp_path_factory: pytest.TempPathFactory, official_sf: Path,
                    official_tree: Path) -> Iterator[ConsoleProcess]:
    proc = make_console(tmp_path_factory, "sqlite", config=console_config(
        official_tree, admission={"unplaceable": "queue"}, serving={"max_ttl_hours": 24}, capacity={"cpu": 0}))
    proc.start()
    yield proc
    proc.stop()
    shutil.rmtree(proc.state_dir / "runs", ignore_errors=True)


@pytest.fixture
def person(serving_console: ConsoleProcess, official_sf: Path, tmp_path: Path) -> Iterator[OfficialUser]:
    user = make_user(serving_console, official_sf, tmp_path / "client", prefix="os")
    user.login()
    yield user
    with user.api() as api:
        api.post("/api/jobs/cancel-all")


def _services(person: OfficialUser) -> dict[str, dict[str, Any]]:
    with person.api() as api:
        answer = api.get("/api/services", params={"all": "true"})
    assert answer.status_code == 200, answer.text
    return {s["id"]: s for s in answer.json()["services"]}


def test_start_ls_extend_and_stop(person: OfficialUser) -> None:
    started = person.sf("serve", "start", MODEL, "--ttl-hours", "2")
    assert started.returncode == 0, output(started)
    ids = set(RUN_ID.findall(output(started)))
    assert len(ids) == 1, output(started)
    sid = ids.pop()
    assert MODEL in output(started)
    service = _services(person)[sid]
    assert (service["model"], service["status"], service["gpus"], service["profile"]) == (MODEL, "queued", 0, "cpu")
    assert service["expires_at"] - service["created_at"] == pytest.approx(2 * 3600, abs=1)

    listed = person.sf("serve", "ls")
    assert listed.returncode == 0, output(listed)
    row = next(line for line in output(listed).splitlines() if sid in line)
    assert MODEL in row and "queued" in row

    extended = person.sf("serve", "extend", sid, "--hours", "1")
    assert extended.returncode == 0, output(extended)
    assert _services(person)[sid]["expires_at"] == pytest.approx(service["expires_at"] + 3600, abs=2)

    stopped = person.sf("serve", "stop", sid)
    assert stopped.returncode == 0, output(stopped)
    assert _services(person)[sid]["status"] == "stopped"
    after = person.sf("serve", "ls")
    assert after.returncode == 0 and sid not in output(after)


def test_a_refused_start_shows_our_reason_and_starts_nothing(person: OfficialUser) -> None:
    unknown = person.sf("serve", "start", "run:r-0000000000", "--gpus", "0")
    assert unknown.returncode == 1, output(unknown)
    assert "no run 'r-0000000000' of yours" in flat(output(unknown))
    too_long = person.sf("serve", "start", MODEL, "--ttl-hours", "100")
    assert too_long.returncode == 1, output(too_long)
    assert "cap of 24 hours" in flat(output(too_long))
    assert _services(person) == {}
