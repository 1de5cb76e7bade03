"""The official sf client (starforge-core 0.3.56), unchanged and run as a black box, on the core path against our console.

Covers the ★ rows of wire-protocol.md: `sf login --token` and the device flow (with refresh and logout), `sf status`,
`sf init`/`sf new`/`sf validate` (no network), `sf submit` accepted, queued and rejected, `sf job ls`, `sf job status`,
`sf job logs` until the `end` event (and across a console restart), `sf job stop` and `sf job cancel-all`; and the
refusal of the older client 0.3.38 at the catalog handshake.

Assertions read the client's exit code, the values our console sent (run ids, statuses, messages, `detail` bullets,
versions) as they appear in its output, the files it writes ($FORGE_HOME, the lab), and our console's state through
its REST API. They never depend on the official client's own wording.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.compat.conftest import (
    IMAGE,
    OBSERVABILITY,
    OFFICIAL_VERSION,
    OLD_VERSION,
    TERMINAL,
    CuttingProxy,
    Lab,
    OfficialUser,
    flat,
    job_row,
    make_user,
    output,
    wait_status,
)
from tests.integration.conftest import ConsoleProcess

# recipes-and-locks §5.3: the bundle digest of nemo-rl/grpo in the 0.3.56 catalog under the `manifest` scheme
GRPO_0356_DIGEST = "sha256:c0b900db15a7a0649710d510164220b638b6947aa40c5c7212f9a4bf7d54805a"
RUN_ID = re.compile(r"\br-[0-9a-z]{10}\b")
CUSTOM = ("--image", IMAGE, "--observability-url", OBSERVABILITY)


def run_id_of(done: subprocess.CompletedProcess[str]) -> str:
    """Return the one run id our console answered, as the client printed it."""
    found = set(RUN_ID.findall(output(done)))
    assert len(found) == 1, output(done)
    return str(found.pop())


def submit(person: OfficialUser, lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    """`sf submit args…` in the lab."""
    return person.sf("submit", *args, cwd=lab.path)


def jobs(api: httpx.Client) -> list[dict[str, Any]]:
    """The caller's jobs, newest first."""
    return list(api.get("/api/jobs/mine", params={"limit": 200}).json()["jobs"])


def admissions(api: httpx.Client) -> list[dict[str, Any]]:
    """The caller's admission decisions, newest first."""
    return list(api.get("/api/admissions/mine").json()["admissions"])


def log_positions(text: str, lines: list[str]) -> list[int]:
    """Return where each whole line occurs (exactly once) in `text`, in the order given."""
    rows = text.splitlines()
    positions = []
    for line in lines:
        assert rows.count(line) == 1, f"{line!r} occurs {rows.count(line)} times in:\n{text}"
        positions.append(rows.index(line))
    return positions


# ---------------------------------------------------------------------------------------------------------- login


def test_login_with_token_stores_it_and_status_reads_the_account(
        official_console: ConsoleProcess, official_sf: Path, tmp_path: Path) -> None:
    person = make_user(official_console, official_sf, tmp_path)
    refused = person.sf("login", "--token", "sfp_not-a-token")
    assert refused.returncode == 1, output(refused)
    assert (not (person.forge_home / "credentials.json").exists()) or person.credentials() == {}

    done = person.login()
    assert person.user in output(done)
    config = json.loads((person.forge_home / "config.json").read_text(encoding="utf-8"))
    assert config["server"] == official_console.url
    stored = person.credentials()
    assert stored["refresh_token"] is None and stored["expires_at"] is None
    assert stored["user"]["username"] == person.user and stored["user"]["role"] == "operator"

    status = person.sf("status")
    assert status.returncode == 0, output(status)
    text = flat(output(status))
    assert person.user in text and "operator" in text
    for profile in ("cpu", "h200", "h100"):  # the profile registry of /api/cluster/status
        assert re.search(rf"\b{profile}\b", text), text


def test_device_flow_login_refresh_rotation_and_logout(
        official_console: ConsoleProcess, official_sf: Path, tmp_path: Path) -> None:
    person = make_user(official_console, official_sf, tmp_path)
    log = tmp_path / "login.out"
    with log.open("w") as sink:
        proc = subprocess.Popen([str(official_sf), "login"], cwd=person.base, env=person.env, text=True,
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        code = None
        while code is None and time.monotonic() < deadline and proc.poll() is None:
            # the verification_uri_complete our console answered, shown by the client
            found = re.search(r"/cli/device\?code=([A-Z0-9-]+)", log.read_text(encoding="utf-8"))
            code = found.group(1) if found else None
            time.sleep(0.1)
        assert code, log.read_text(encoding="utf-8")
        with person.api() as api:
            approved = api.post("/api/cli/device/approve", json={"user_code": code})
            assert approved.status_code == 200, approved.text
            assert approved.json()["device"]["cli_version"] == OFFICIAL_VERSION  # §4.5 device parameter
        assert proc.wait(timeout=30) == 0, log.read_text(encoding="utf-8")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert person.user in log.read_text(encoding="utf-8")
    first = person.credentials()
    assert first["refresh_token"] and first["expires_at"] > time.time() + 600  # expires_in well above 60 s
    assert first["user"]["username"] == person.user

    # expire the stored access token (client state, wire §3): the next command refreshes and stores the rotation
    path = person.forge_home / "credentials.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored[official_console.url]["expires_at"] = 1.0
    path.write_text(json.dumps(stored), encoding="utf-8")
    status = person.sf("status")
    assert status.returncode == 0, output(status)
    assert person.user in output(status)
    second = person.credentials()
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] and second["refresh_token"] != first["refresh_token"]
    assert second["expires_at"] > time.time() + 600

    out = person.sf("logout")
    assert out.returncode == 0, output(out)
    assert person.credentials() == {}
    revoked = httpx.post(f"{official_console.url}/api/auth/refresh", json={"refresh_token": second["refresh_token"]})
    assert revoked.status_code == 401, revoked.text
    after = person.sf("status")
    assert after.returncode == 1, output(after)


# ------------------------------------------------------------------------------------------ lab, new, validate


def test_lab_made_by_the_official_client_validates_offline(lab: Lab, user: OfficialUser) -> None:
    assert (lab.path / "starforge.yaml").is_file()
    lock = json.loads((lab.path / "experiments" / "my-grpo" / "recipe.lock.json").read_text(encoding="utf-8"))
    assert lock["recipe"]["name"] == "nemo-rl/grpo" and lock["recipe"]["digest"] == GRPO_0356_DIGEST
    for name in ("my-grpo", "hello"):
        done = user.sf("validate", name, cwd=lab.path, FORGE_SERVER="http://127.0.0.1:9")  # no network needed
        assert done.returncode == 0, output(done)
        assert f"experiments/{name}" in output(done)
    assert lab.git("status", "--porcelain", env=user.env) == ""


def test_the_published_catalog_matches_the_official_lock(official_console: ConsoleProcess, lab: Lab,
                                                         user: OfficialUser) -> None:
    with user.api() as api:
        payload = api.get("/api/recipes").json()
    assert payload["core"] == {"version": OFFICIAL_VERSION, "requirement": ">=0.3.56,<0.4"}
    entries = {entry["name"]: entry for entry in payload["recipes"]}
    for name in ("my-grpo", "hello"):
        lock = json.loads((lab.path / "experiments" / name / "recipe.lock.json").read_text(encoding="utf-8"))
        entry = entries[lock["recipe"]["name"]]
        assert (entry["version"], entry["digest"]) == (lock["recipe"]["version"], lock["recipe"]["digest"])
        assert entry["framework"] == lock["framework"]["kind"]
        assert lock["framework"]["version"] in entry["supported_framework_versions"]


# ----------------------------------------------------------------------------------------------- submissions


def test_submit_h200_is_admitted_and_queued_then_listed_shown_and_stopped(lab: Lab, user: OfficialUser) -> None:
    done = submit(user, lab, "my-grpo", "--profile", "h200:8")
    assert done.returncode == 0, output(done)
    job = run_id_of(done)
    assert "no h200 capacity" in flat(output(done))  # our queue reason (`message`) is shown
    with user.api() as api:
        rows = jobs(api)
        assert [row["job_ref"] for row in rows] == [job]
        row = rows[0]
        assert row["run_id"] == job and row["status"] in ("pending", "queued")
        assert (row["exp"], row["requested_gpus"], row["profile"]) == ("experiments/my-grpo", 8, "h200")
        spec = api.get(f"/api/jobs/{job}/jobspec").json()
        decision = admissions(api)[0]
    assert spec["metadata"]["owner"] == user.user
    assert spec["metadata"]["project"] == "compat"
    assert spec["spec"]["recipe"] == {"name": "nemo-rl/grpo", "version": "0.7.0", "digest": GRPO_0356_DIGEST}
    assert spec["spec"]["resources"]["pools"] == [{"name": "all", "nodes": 1, "gpus_per_node": 8, "series": "h200"}]
    assert spec["provenance"]["core_version"] == OFFICIAL_VERSION
    commit = spec["provenance"]["git_commit"]
    assert len(commit) >= 7 and lab.git("rev-parse", "HEAD", env=user.env).startswith(commit)
    assert (decision["verdict"], decision["job_id"]) == ("queued", job)  # answered 202 {"queued": true}

    listed = user.sf("job", "ls", cwd=lab.path)
    assert listed.returncode == 0, output(listed)
    assert job in listed.stdout and re.search(r"\b(pending|queued)\b", listed.stdout)

    shown = user.sf("job", "status", job[:6], cwd=lab.path)  # a unique prefix, resolved by the client
    assert shown.returncode == 0, output(shown)
    text = flat(output(shown))
    assert job in text and "experiments/my-grpo" in text and re.search(r"\b(pending|queued)\b", text)

    paused = user.sf("job", "pause", job, cwd=lab.path)  # POST /api/job/pause?id=: held, in its place
    assert paused.returncode == 0, output(paused)
    with user.api() as api:
        assert job_row(api, job)["status"] == "paused"
    resumed = user.sf("job", "resume", job, cwd=lab.path)  # POST /api/job/resume?id=: back in the queue
    assert resumed.returncode == 0, output(resumed)
    with user.api() as api:
        assert job_row(api, job)["status"] in ("pending", "queued")

    stopped = user.sf("job", "stop", job, cwd=lab.path)
    assert stopped.returncode == 0, output(stopped)
    with user.api() as api:
        assert job_row(api, job)["status"] == "stopped"
    again = user.sf("job", "stop", job, cwd=lab.path)  # terminal: 200 {"stopped": false, "status": ...}
    assert again.returncode == 0, output(again)
    assert "stopped" in output(again)


def test_unknown_set_key_is_refused_by_the_client_before_upload(lab: Lab, user: OfficialUser) -> None:
    done = submit(user, lab, "my-grpo", "--profile", "h200:8", "--set", "no_such_key_xyz=1")
    assert done.returncode == 1, output(done)
    assert "no_such_key_xyz" in output(done)
    with user.api() as api:
        assert jobs(api) == [] and admissions(api) == []


def test_server_side_rejection_renders_our_detail_bullets(official_console: ConsoleProcess, lab: Lab,
                                                          user: OfficialUser) -> None:
    done = submit(user, lab, "my-grpo", "--profile", "h200:8", "--image", "docker.io/library/ubuntu:22.04")
    assert done.returncode == 1, output(done)
    with user.api() as api:
        assert jobs(api) == []
        decision = admissions(api)[0]
    assert decision["verdict"] == "rejected"
    [problem] = decision["problems"]
    assert problem["field"] == "spec.framework.image" and problem["code"] == "image_not_allowed"
    text = flat(output(done))
    assert "The JobSpec was rejected" in text  # our title line
    assert f"{problem['field']}: {problem['message']}" in text

    # several problems at once: every bullet is shown, in admission order
    with official_console.client(official_console.admin_token) as admin:
        capped = admin.post("/api/admin/quotas", json={"username": user.user, "allowed_profiles": ["cpu"],
                                                       "max_concurrent_gpus": 4})
        assert capped.status_code == 200, capped.text
    many = submit(user, lab, "my-grpo", "--profile", "h200:8", "--image", "docker.io/library/ubuntu:22.04")
    assert many.returncode == 1, output(many)
    with user.api() as api:
        problems = admissions(api)[0]["problems"]
        assert jobs(api) == []
    assert len(problems) >= 3
    text = flat(output(many))
    bullets = [text.index(f"{p['field']}: {p['message']}") for p in problems]
    assert bullets == sorted(bullets), text


# ---------------------------------------------------------------------------------------- running jobs and logs


def test_custom_job_runs_locally_and_logs_follow_until_the_end(lab: Lab, user: OfficialUser) -> None:
    done = submit(user, lab, "hello", "--profile", "cpu:1", *CUSTOM)
    assert done.returncode == 0, output(done)
    job = run_id_of(done)

    followed = user.sf("job", "logs", job, cwd=lab.path, timeout=90)  # follows the live job to `end`
    assert followed.returncode == 0, output(followed)
    expected = [f"compat-line {i} of 5 recipe=custom/custom nodes=1x1 exp=experiments/hello" for i in range(1, 6)]
    expected.append("compat-done")
    positions = log_positions(followed.stdout, expected)  # log data reaches stdout exactly, once each
    assert positions == sorted(positions)
    with user.api() as api:
        row = job_row(api, job)
        assert row["status"] == "succeeded", row
        assert admissions(api)[0]["verdict"] == "accepted"
        spec = api.get(f"/api/jobs/{job}/jobspec").json()
    assert spec["metadata"]["owner"] == user.user
    assert IMAGE in json.dumps(spec["spec"]["framework"])

    shown = user.sf("job", "status", "hello", cwd=lab.path)  # the experiment basename is a handle too
    assert shown.returncode == 0, output(shown)
    assert job in output(shown) and re.search(r"\bsucceeded\b", output(shown))

    replay = user.sf("job", "logs", "-n", "0", cwd=lab.path, timeout=60)  # no id: the latest job, whole history
    assert replay.returncode == 0, output(replay)
    assert log_positions(replay.stdout, expected) == positions
    tail = user.sf("job", "logs", job, "-n", "2", cwd=lab.path, timeout=60)
    assert tail.returncode == 0, output(tail)
    log_positions(tail.stdout, ["compat-done"])  # the second-to-last log line is replayed, nothing older
    assert "compat-line" not in tail.stdout


def test_the_official_custom_template_finds_its_environment(lab: Lab, user: OfficialUser) -> None:
    """The scaffolding `sf new --method custom/custom` wrote, unchanged: it checks the FORGE_* variables it needs
    (failing with status 1 when one is missing) and then stops with its own placeholder status 2."""
    done = submit(user, lab, "template", "--profile", "cpu:1", *CUSTOM)
    assert done.returncode == 0, output(done)
    job = run_id_of(done)
    followed = user.sf("job", "logs", job, cwd=lab.path, timeout=90)
    assert followed.returncode == 0, output(followed)
    with user.api() as api:
        row = job_row(api, job)
    assert (row["status"], row.get("exit_code")) == ("failed", 2), (row, followed.stdout)


def test_failing_job_ends_the_stream_and_reports_failed(lab: Lab, user: OfficialUser) -> None:
    done = submit(user, lab, "failing", "--profile", "cpu:1", *CUSTOM)
    assert done.returncode == 0, output(done)
    job = run_id_of(done)
    followed = user.sf("job", "logs", job, cwd=lab.path, timeout=90)
    assert followed.returncode == 0, output(followed)
    log_positions(followed.stdout, ["compat-about-to-fail"])
    with user.api() as api:
        assert job_row(api, job)["status"] == "failed"
    shown = user.sf("job", "status", job, cwd=lab.path)
    assert shown.returncode == 0 and re.search(r"\bfailed\b", output(shown)), output(shown)


def test_stop_a_running_job(lab: Lab, user: OfficialUser) -> None:
    done = submit(user, lab, "long", "--profile", "cpu:1", *CUSTOM)
    assert done.returncode == 0, output(done)
    job = run_id_of(done)
    with user.api() as api:
        wait_status(api, job, {"running"})
        assert _log_has(api, job, "compat-tick 2\n")
    stopped = user.sf("job", "stop", job, cwd=lab.path)
    assert stopped.returncode == 0, output(stopped)
    with user.api() as api:
        row = wait_status(api, job, TERMINAL, timeout=30)
    assert row["status"] == "stopped", row
    followed = user.sf("job", "logs", job, cwd=lab.path, timeout=60)
    assert followed.returncode == 0, output(followed)
    log_positions(followed.stdout, ["compat-tick 1", "compat-tick 2"])


def test_cancel_all_stops_running_and_queued_jobs(lab: Lab, user: OfficialUser) -> None:
    submitted = []
    for args in (("long", "--profile", "cpu:1", *CUSTOM), ("my-grpo", "--profile", "h200:8"),
                 ("my-grpo", "--profile", "h100")):
        done = submit(user, lab, *args)
        assert done.returncode == 0, output(done)
        submitted.append(run_id_of(done))
    with user.api() as api:
        wait_status(api, submitted[0], {"running"})
        listed = user.sf("job", "ls", cwd=lab.path)
        assert listed.returncode == 0, output(listed)
        order = [listed.stdout.index(job) for job in reversed(submitted)]  # newest first
        assert order == sorted(order), listed.stdout

        cancelled = user.sf("job", "cancel-all", "--yes", cwd=lab.path)
        assert cancelled.returncode == 0, output(cancelled)
        assert re.search(r"\b3\b", output(cancelled)), output(cancelled)  # our {"stopped": 3}
        assert job_row(api, submitted[2])["requested_gpus"] == 8  # a bare profile takes the registry's shape
        for job in submitted:
            assert wait_status(api, job, TERMINAL, timeout=30)["status"] == "stopped"
    again = user.sf("job", "cancel-all", "--yes", cwd=lab.path)
    assert again.returncode == 0, output(again)
    assert re.search(r"\b0\b", output(again)), output(again)


def test_logs_resume_after_a_cut_stream_without_loss_or_repeat(
        official_console: ConsoleProcess, lab: Lab, user: OfficialUser, tmp_path: Path) -> None:
    done = submit(user, lab, "long", "--profile", "cpu:1", *CUSTOM)
    assert done.returncode == 0, output(done)
    job = run_id_of(done)
    proxy = CuttingProxy(official_console.port)
    env = {**user.env, "FORGE_SERVER": proxy.url}
    sink, stderr = tmp_path / "logs.out", tmp_path / "logs.err"
    try:
        # the stored login is keyed by the server URL (wire §3): log in through the proxy too
        user.login(proxy.url)
        with sink.open("w") as out, stderr.open("w") as errors:
            follower = subprocess.Popen([str(user.exe), "job", "logs", job], cwd=lab.path, env=env, text=True,
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=errors)
        try:
            _wait_text(sink, "compat-tick 3\n", follower)
            streams = [r for r in proxy.requests if "/api/job/logs/stream" in r]
            assert len(streams) == 1 and "tail=" in streams[0], proxy.requests
            proxy.cut()  # the stream closes without `end`: the client reconnects from its last event id
            deadline = time.monotonic() + 30
            while len(streams := [r for r in proxy.requests if "/api/job/logs/stream" in r]) < 2:
                assert time.monotonic() < deadline and follower.poll() is None, proxy.requests
                time.sleep(0.05)
            assert "from=" in streams[1] and "tail=" not in streams[1], proxy.requests
            # lines the job printed after the reconnection, so the final check spans the cut
            last = max(int(line.split()[1]) for line in sink.read_text(encoding="utf-8").splitlines()
                       if line.startswith("compat-tick "))
            _wait_text(sink, f"compat-tick {max(8, last + 2)}\n", follower)
            stopped = user.sf("job", "stop", job, cwd=lab.path)
            assert stopped.returncode == 0, output(stopped)
            assert follower.wait(timeout=60) == 0, stderr.read_text(encoding="utf-8")
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
    finally:
        proxy.close()
    text = sink.read_text(encoding="utf-8")
    ticks = [int(line.split()[1]) for line in text.splitlines() if line.startswith("compat-tick ")]
    assert ticks == list(range(1, len(ticks) + 1)), text  # every line once, in order, none lost
    assert len(ticks) >= 8


def _log_has(api: httpx.Client, job: str, needle: str, timeout: float = 30) -> bool:
    """Read our log stream of a job (replaying everything) until `needle` shows up or `timeout` passes."""
    deadline = time.monotonic() + timeout
    seen = ""
    with api.stream("GET", "/api/job/logs/stream", params={"id": job, "tail": 0}, timeout=timeout) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                seen += line[6:] if line.startswith("data: ") else line[5:]
                seen += "\n"
            if needle in seen or time.monotonic() > deadline or line.startswith("event: end"):
                break
    return needle in seen


def _wait_text(path: Path, needle: str, proc: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in path.read_text(encoding="utf-8"):
            return
        errors = path.with_suffix(".err")
        assert proc.poll() is None, path.read_text(encoding="utf-8") + (
            errors.read_text(encoding="utf-8") if errors.is_file() else "")
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} not seen:\n{path.read_text(encoding='utf-8')}")


# --------------------------------------------------------------------------------------------- older client


def test_older_client_is_refused_at_the_handshake_before_upload(
        official_console: ConsoleProcess, old_sf: Path, tmp_path: Path) -> None:
    person = make_user(official_console, old_sf, tmp_path)
    version = person.sf("--version")
    assert OLD_VERSION in version.stdout, output(version)
    made = person.sf("init", "old-lab", "--yes", "--name", "oldlab")
    assert made.returncode == 0, output(made)
    old_lab = tmp_path / "old-lab"
    new = person.sf("new", "my-grpo", "--method", "nemo-rl/grpo", cwd=old_lab)
    assert new.returncode == 0, output(new)
    subprocess.run(["git", "add", "-A"], cwd=old_lab, env=person.env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "old"], cwd=old_lab, env=person.env, check=True)
    person.login()

    done = person.sf("submit", "my-grpo", "--profile", "h200:8", cwd=old_lab)
    assert done.returncode == 1, output(done)
    text = flat(output(done))
    assert ">=0.3.56,<0.4" in text and OLD_VERSION in text, text  # the requirement and the client's version
    with person.api() as api:
        assert jobs(api) == []
        assert admissions(api) == []  # refused before upload: nothing reached admission
