"""MCP against a real console on loopback, through the SDK's own client: streamable HTTP and stdio (`sf mcp`)."""

from __future__ import annotations

import base64
import copy
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

import starforge
from starforge.contract import CODES
from tests.integration import helpers
from tests.integration.conftest import SF, ConsoleProcess, unique
from tests.integration.test_cli_account import sf, token_login

MCP_PATH = "/api/mcp/rpc"
TEMPLATE = (Path(starforge.__file__).parent / "recipes" / "builtin" / "tinyrl" / "grpo" / "template"
            / "config.yaml").read_text(encoding="utf-8")
COMMON = {"validate_jobspec", "explain_rejection", "list_recipes", "show_recipe", "submit_job", "list_jobs", "get_job",
          "get_job_logs", "stop_job", "pause_job", "resume_job", "retry_job", "get_quota", "cluster_status"}
LAB = {"build_jobspec", "recipe_status"}
ENDED = {"succeeded", "failed", "stopped"}


# ---- sessions and an agent's small habits -------------------------------------------------------------------------

@asynccontextmanager
async def http_session(console: ConsoleProcess, token: str) -> AsyncIterator[ClientSession]:
    """An MCP session over streamable HTTP at the console's /api/mcp/rpc with a bearer token."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http, \
            streamable_http_client(console.url + MCP_PATH, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(console: ConsoleProcess, home: Path, cwd: Path | None = None) -> AsyncIterator[ClientSession]:
    """An MCP session with `sf mcp` spawned over stdio, logged in through `home`."""
    env = {"FORGE_HOME": str(home), "FORGE_SERVER": console.url, "NO_COLOR": "1"}
    params = StdioServerParameters(command=SF, args=["mcp"], env=env, cwd=str(cwd or home))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def run(body: Callable[[], Awaitable[None]]) -> None:
    """Run an async test body."""
    anyio.run(body)


async def call(session: ClientSession, name: str, args: dict[str, Any] | None = None, *,
               ok: bool | None = True) -> CallToolResult:
    """Call a tool; with `ok` set, assert it did (not) end as a tool error."""
    result = await session.call_tool(name, args or {})
    assert isinstance(result, CallToolResult)
    if ok is not None:
        assert bool(result.is_error) is (not ok), (name, result.content[0].text if result.content else result)
    return result


def data(result: CallToolResult) -> dict[str, Any]:
    """Return the structured content of a result."""
    assert result.structured_content is not None
    return dict(result.structured_content)


def apply_patches(spec: dict[str, Any], profile: str, patches: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """Apply explain_rejection's patches the way an agent would: dotted spec paths, or the `profile` argument."""
    spec = copy.deepcopy(spec)
    for patch in patches:
        if patch["target"] == "profile":
            profile = patch["value"]
            continue
        *parents, leaf = patch["target"].split(".")
        node = spec
        for key in parents:
            node = node.setdefault(key, {})
        if patch["op"] == "remove":
            node.pop(leaf, None)
        else:
            node[leaf] = patch["value"]
    return spec, profile


async def wait_for_status(session: ClientSession, job: str, statuses: set[str], timeout: float = 120) -> str:
    """Poll get_job until the job's status is one of `statuses`."""
    deadline = time.monotonic() + timeout
    status = ""
    while time.monotonic() < deadline:
        status = data(await call(session, "get_job", {"job": job}))["job"]["status"]
        if status in statuses:
            return status
        await anyio.sleep(0.3)
    raise AssertionError(f"{job} stayed {status!r}, expected one of {statuses}")


async def wait_for_output(session: ClientSession, job: str, text: str, timeout: float = 60) -> dict[str, Any]:
    """Poll get_job_logs (the log as it is now, never following) until the log holds `text`."""
    deadline = time.monotonic() + timeout
    window: dict[str, Any] = {}
    while time.monotonic() < deadline:
        window = data(await call(session, "get_job_logs", {"job": job}))
        if text in window["text"]:
            return window
        await anyio.sleep(0.3)
    raise AssertionError(f"the log of {job} never showed {text!r}: {window}")


async def follow_logs(session: ClientSession, job: str, timeout: float = 240) -> tuple[str, str]:
    """Read the whole log with get_job_logs, polling from the last event id, until the job has ended."""
    deadline = time.monotonic() + timeout
    text, last = "", None
    while time.monotonic() < deadline:
        args: dict[str, Any] = {"job": job, "max_bytes": 65536}
        args.update({"from_event_id": last} if last else {"tail": 0})
        window = data(await call(session, "get_job_logs", args))
        text += window["text"]
        last = window["last_event_id"] or last
        if window["ended"]:
            return text, window["status"]
        await anyio.sleep(0.5)
    raise AssertionError(f"the log of {job} did not end: {text[-500:]}")


def bundle_b64(files: dict[str, str]) -> str:
    """Return a bundle of `files`, base64-encoded for submit_job."""
    return base64.b64encode(helpers.bundle(files)).decode("ascii")


def spec_for(console: ConsoleProcess, token: str, recipe: str = "tinyrl/grpo", **kwargs: Any) -> dict[str, Any]:
    """Return a valid spec from the console's catalog (the test's starting point, not part of the agent's path)."""
    with console.client(token) as api:
        return helpers.spec_for(api, recipe, **kwargs)


# ---- the transport itself -------------------------------------------------------------------------------------------

def test_no_token_no_mcp(console: ConsoleProcess) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    for extra in ({}, {"Authorization": "Bearer sfp_not-a-token"}, {"Authorization": "Basic abc"}):
        answer = httpx.post(console.url + MCP_PATH, json=initialize, headers={**headers, **extra}, timeout=30)
        assert answer.status_code == 401, answer.text
        assert answer.headers["www-authenticate"] == "Bearer"
        assert answer.json()["problems"] == [] and answer.json()["detail"]
    assert httpx.get(console.url + MCP_PATH, timeout=30).status_code == 401

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http, \
                streamable_http_client(console.url + MCP_PATH, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            with anyio.fail_after(30), pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 401
                await session.initialize()

    run(body)


def test_both_transports_list_the_tools_with_schemas(console: ConsoleProcess, forge_home: Path) -> None:
    user = unique("list")
    token = token_login(console, forge_home, user)

    async def body() -> None:
        async with http_session(console, token) as session:
            listed = (await session.list_tools()).tools
            assert {t.name for t in listed} == COMMON
            assert all(t.input_schema["type"] == "object" and t.output_schema for t in listed)
            assert {str(r.uri) for r in (await session.list_resources()).resources} == {
                "starforge://schema/jobspec", "starforge://catalog"}
            schema = (await session.read_resource("starforge://schema/jobspec")).contents[0]
            assert '"forge/v2"' in getattr(schema, "text", "")
        async with stdio_session(console, forge_home) as session:
            assert {t.name for t in (await session.list_tools()).tools} == COMMON | LAB
            me = data(await call(session, "get_quota"))
            assert me["user"]["username"] == user

    run(body)


# ---- a rejection, explained, fixed, running ------------------------------------------------------------------------

def test_a_bad_spec_is_validated_and_explained(console: ConsoleProcess) -> None:
    token = console.token_for(unique("bad"))
    spec = spec_for(console, token)
    spec["spec"]["recipe"]["version"] = "0.9.0"

    async def body() -> None:
        async with http_session(console, token) as session:
            verdict = data(await call(session, "validate_jobspec", {"spec": spec, "profile": "cpu"}))
            assert verdict["ok"] is False
            [problem] = verdict["problems"]
            assert problem["field"] == "spec.recipe.version" and problem["code"] == "recipe_version_mismatch"
            explained = data(await call(session, "explain_rejection", {"rejection": verdict, "spec": spec}))
            [item] = explained["explanations"]
            assert item["cause"] == CODES["recipe_version_mismatch"]
            assert "sf recipe upgrade toy" in item["fix"] and "sf recipe upgrade toy" in item["commands"]
            assert {"target": "spec.recipe.version", "op": "set", "value": "1.0.0"} in item["patches"]

            broken = data(await call(session, "validate_jobspec", {"spec": {"apiVersion": "forge/v1"}}))
            assert {p["field"] for p in broken["problems"]} >= {"apiVersion", "kind", "metadata", "spec"}
            again = data(await call(session, "explain_rejection", {"spec": {"apiVersion": "forge/v1"}}))
            assert again["checked_spec"] is True and again["count"] == len(broken["problems"])

    run(body)


def test_an_agent_goes_from_a_failing_spec_to_a_running_job_with_the_tools_only(console: ConsoleProcess) -> None:
    token = console.token_for(unique("agent"))
    spec = spec_for(console, token, hyperparams={"max_num_steps": 0})
    spec["spec"]["recipe"]["version"] = "0.9.0"
    spec["spec"]["recipe"]["digest"] = "sha256:" + "0" * 64
    profile = "gpu-xl"
    files = {"experiments/toy/config.yaml": TEMPLATE}

    async def body() -> None:
        nonlocal spec, profile
        seen: list[str] = []
        async with http_session(console, token) as session:
            for _ in range(6):
                verdict = data(await call(session, "validate_jobspec", {"spec": spec, "profile": profile}))
                if verdict["ok"]:
                    break
                seen += [p["code"] for p in verdict["problems"]]
                explained = data(await call(session, "explain_rejection",
                                            {"rejection": verdict, "spec": spec, "profile": profile}))
                patches = [p for item in explained["explanations"] for p in item["patches"]]
                assert patches, explained
                spec, profile = apply_patches(spec, profile, patches)
            else:
                raise AssertionError(f"still refused after {seen}")
            assert seen == ["recipe_version_mismatch", "hyperparameter_range", "profile_unknown"]
            assert profile == "cpu" and spec["spec"]["hyperparams"]["max_num_steps"] == 1

            submitted = data(await call(session, "submit_job", {"spec": spec, "profile": profile,
                                                                "bundle_base64": bundle_b64(files)}))
            job = submitted["job_id"]
            assert submitted["idempotency_key"] and submitted["profile"] == "cpu"
            status = await wait_for_status(session, job, {"running", *ENDED})
            assert status in {"running", "succeeded"}
            text, final = await follow_logs(session, job)
            assert final == "succeeded", text[-2000:]

    run(body)


def test_a_good_job_runs_and_its_logs_are_followed_over_stdio(console: ConsoleProcess, forge_home: Path) -> None:
    user = unique("good")
    token = token_login(console, forge_home, user)
    spec = spec_for(console, token, exp="experiments/good", hyperparams={"max_num_steps": 20})
    files = {"experiments/good/config.yaml": TEMPLATE}

    async def body() -> None:
        async with stdio_session(console, forge_home) as session:
            verdict = data(await call(session, "validate_jobspec", {"spec": spec, "profile": "cpu"}))
            assert verdict["ok"] is True, verdict
            key = unique("key")
            args = {"spec": spec, "profile": "cpu", "bundle_base64": bundle_b64(files), "idempotency_key": key}
            job = data(await call(session, "submit_job", args))["job_id"]
            assert data(await call(session, "submit_job", args))["job_id"] == job  # the same key: the same job
            text, final = await follow_logs(session, job)
            assert final == "succeeded" and text.strip(), text[-2000:]
            shown = data(await call(session, "get_job", {"job": job}))
            assert shown["job"]["status"] == "succeeded" and "train/reward" in shown["metrics"]
            tail = data(await call(session, "get_job_logs", {"job": job, "tail": 3}))
            assert tail["ended"] is True and 0 < tail["text"].count("\n") <= 3
            admitted = (await session.read_resource(f"starforge://jobs/{job}/jobspec")).contents[0]
            assert f'"owner": "{user}"' in getattr(admitted, "text", "")
            assert [j["ref"] for j in data(await call(session, "list_jobs"))["jobs"]] == [job]

    run(body)


def test_a_long_custom_job_is_stopped(console: ConsoleProcess) -> None:
    token = console.token_for(unique("long"))
    spec = spec_for(console, token, "custom/custom", exp="experiments/long")
    spec["spec"]["framework"]["image"] = "nvcr.io/team/t:1"
    spec["spec"]["framework"]["observability_url"] = "https://wandb.example.com/team/p"
    files = {"experiments/long/train.sh": "echo started\nsleep 600\n"}

    async def body() -> None:
        async with http_session(console, token) as session:
            job = data(await call(session, "submit_job", {"spec": spec, "profile": "cpu",
                                                          "bundle_base64": bundle_b64(files)}))["job_id"]
            assert await wait_for_status(session, job, {"running", *ENDED}) == "running"
            window = await wait_for_output(session, job, "started")
            assert window["ended"] is False and window["last_event_id"] is not None
            stopped = data(await call(session, "stop_job", {"job": job}))
            assert stopped["stopped"] is True
            assert await wait_for_status(session, job, ENDED, timeout=60) in {"stopped", "failed"}
            again = data(await call(session, "stop_job", {"job": job}))
            assert again["stopped"] is False

    run(body)


# ---- permissions are the console's ----------------------------------------------------------------------------------

def test_a_viewer_reads_but_its_submission_is_refused(console: ConsoleProcess) -> None:
    viewer = console.token_for(unique("view"), role="viewer")
    spec = spec_for(console, viewer)

    async def body() -> None:
        async with http_session(console, viewer) as session:
            assert data(await call(session, "get_quota"))["user"]["role"] == "viewer"
            assert data(await call(session, "list_recipes"))["count"] >= 1
            assert data(await call(session, "list_jobs"))["jobs"] == []
            refused = await call(session, "submit_job", {"spec": spec, "profile": "cpu"}, ok=False)
            error = data(refused)
            assert error["status"] == 403 and error["error"] == "Forbidden" and "viewer" in error["detail"]
            assert "Traceback" not in refused.content[0].text

    run(body)


def test_a_user_cannot_see_another_users_job(console: ConsoleProcess) -> None:
    owner, other = console.token_for(unique("owner")), console.token_for(unique("other"))
    spec = spec_for(console, owner, exp="experiments/mine", hyperparams={"max_num_steps": 5})
    files = {"experiments/mine/config.yaml": TEMPLATE}

    async def body() -> None:
        async with http_session(console, owner) as session:
            job = data(await call(session, "submit_job", {"spec": spec, "profile": "cpu",
                                                          "bundle_base64": bundle_b64(files)}))["job_id"]
            assert data(await call(session, "get_job", {"job": job}))["job"]["ref"] == job
        async with http_session(console, other) as session:
            assert data(await call(session, "list_jobs"))["jobs"] == []
            for tool in ("get_job", "get_job_logs", "stop_job"):
                error = data(await call(session, tool, {"job": job}, ok=False))
                assert error["error"] == "NotFound", (tool, error)
            with pytest.raises(MCPError):
                await session.read_resource(f"starforge://jobs/{job}/jobspec")

    run(body)


# ---- the lab, over stdio --------------------------------------------------------------------------------------------

def test_stdio_builds_and_submits_an_experiment_of_the_lab(console: ConsoleProcess, forge_home: Path,
                                                          tmp_path: Path) -> None:
    token_login(console, forge_home, unique("lab"))
    assert sf("init", str(tmp_path / "lab"), home=forge_home).returncode == 0
    lab = tmp_path / "lab"
    made = subprocess.run([SF, "new", "toy", "--recipe", "tinyrl/grpo"], cwd=lab, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    subprocess.run(["git", "add", "-A"], cwd=lab, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "toy"], cwd=lab,
                   check=True)

    async def body() -> None:
        async with stdio_session(console, forge_home, cwd=lab / "experiments") as session:
            status = data(await call(session, "recipe_status"))
            assert status["ok"] is True and [e["exp"] for e in status["experiments"]] == ["experiments/toy"]
            refused = data(await call(session, "build_jobspec", {"exp": "nope", "profile": "cpu"}, ok=False))
            assert refused["problems"][0]["field"] == "exp"
            built = data(await call(session, "build_jobspec", {"exp": "toy", "profile": "cpu",
                                                               "sets": ["max_num_steps=5"], "include_bundle": True}))
            assert built["spec"]["spec"]["hyperparams"]["max_num_steps"] == 5 and built["bundle_base64"]
            assert data(await call(session, "validate_jobspec", {"spec": built["spec"], "profile": "cpu"}))["ok"]
            job = data(await call(session, "submit_job", {"spec": built["spec"], "profile": built["profile"],
                                                          "bundle_base64": built["bundle_base64"]}))["job_id"]
            _text, final = await follow_logs(session, job)
            assert final == "succeeded"

    run(body)
