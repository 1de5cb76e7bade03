"""The same tool expectations on both backends: the console's own endpoint (service backend, in process) and the
stdio backend (the Python SDK against the same console's REST API). Permissions and refusals are the console's."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError

from starforge.console.services.jobs import attempts
from starforge.console.store.models import Job
from starforge.contract import CODES
from starforge.mcp import MAX_LOG_BYTES
from tests.integration import helpers
from tests.unit.mcp.conftest import COMMON, LAB, World, call, session

LOG = "".join(f"step {i:03d} reward {i / 100:.2f}\n" for i in range(200))  # 200 lines, 4,000 bytes


def run(body: Callable[[], Awaitable[None]]) -> None:
    anyio.run(body)


def test_the_tools_are_listed_with_their_schemas(world: World, kind: str) -> None:
    _name, token = world.account("list")

    async def body() -> None:
        async with session(world, kind, token) as client:
            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == (COMMON if kind == "http" else COMMON | LAB)
            assert all(t.input_schema["type"] == "object" and t.output_schema for t in tools)
            problem = next(t for t in tools if t.name == "validate_jobspec").output_schema
            assert problem is not None and "data" in problem["$defs"]["ProblemOut"]["properties"]

    run(body)


def test_account_cluster_and_recipes(world: World, kind: str) -> None:
    name, token = world.account("acct")

    async def body() -> None:
        async with session(world, kind, token) as client:
            me = await call(client, "get_quota")
            assert me["user"] == {"username": name, "role": "operator"} and "max_concurrent_gpus" in me["quota"]
            cluster = await call(client, "cluster_status")
            assert {"cpu", "h200"} <= {p["name"] for p in cluster["profiles"]}
            listed = await call(client, "list_recipes")
            grpo = next(r for r in listed["recipes"] if r["name"] == "tinyrl/grpo")
            assert grpo["title"] and grpo["digest"].startswith("sha256:")
            shown = await call(client, "show_recipe", {"recipe": "tinyrl/grpo"})
            assert shown["published"] is True and shown["notes"] == []
            assert "max_num_steps" in {p["name"] for p in shown["params"]}
            unknown = await call(client, "show_recipe", {"recipe": "nope/nope"}, ok=False)
            assert unknown["error"] == "Refused" and unknown["status"] == 404

    run(body)


def test_a_rejection_is_a_verdict_and_is_explained(world: World, kind: str) -> None:
    _name, token = world.account("bad")
    spec = world.spec(token, exp="experiments/toy")
    spec["spec"]["recipe"]["version"] = "0.9.0"

    async def body() -> None:
        async with session(world, kind, token) as client:
            verdict = await call(client, "validate_jobspec", {"spec": spec, "profile": "h200"})
            [problem] = verdict["problems"]
            assert verdict["ok"] is False and problem["code"] == "recipe_version_mismatch"
            assert problem["data"]["got"] == "0.9.0"  # the facts travel with the problem
            explained = await call(client, "explain_rejection", {"rejection": verdict, "spec": spec})
            [item] = explained["explanations"]
            assert item["cause"] == CODES["recipe_version_mismatch"] and "sf recipe upgrade toy" in item["commands"]
            assert {"target": "spec.recipe.version", "op": "set", "value": "1.0.0"} in item["patches"]
            checked = await call(client, "explain_rejection", {"spec": {"apiVersion": "forge/v1"}})
            assert checked["checked_spec"] is True and checked["count"] >= 4

    run(body)


def test_submit_list_show_and_stop(world: World, kind: str) -> None:
    name, token = world.account("sub")
    spec = world.spec(token, exp="experiments/sub")
    bundle = base64.b64encode(helpers.bundle({"experiments/sub/config.yaml": "grpo: {}\n"})).decode("ascii")

    async def body() -> None:
        async with session(world, kind, token) as client:
            args = {"spec": spec, "profile": "h200", "bundle_base64": bundle, "idempotency_key": f"key-{name}"}
            first = await call(client, "submit_job", args)
            job = first["job_id"]
            assert first["queued"] is True and first["profile"] == "h200" and first["idempotency_key"] == f"key-{name}"
            assert (await call(client, "submit_job", args))["job_id"] == job  # the same key: the same job
            listed = await call(client, "list_jobs")
            assert [j["ref"] for j in listed["jobs"]] == [job] and listed["jobs"][0]["owner"] == name
            shown = await call(client, "get_job", {"job": job[:5]})
            assert shown["job"]["ref"] == job and shown["job"]["terminal"] is False and shown["metrics"] == {}
            assert (await call(client, "get_job", {"job": "sub"}))["job"]["ref"] == job  # by experiment name
            newer = (await call(client, "submit_job", {**args, "idempotency_key": f"key-{name}-2"}))["job_id"]
            assert (await call(client, "get_job", {"job": "sub"}))["job"]["ref"] == newer  # a name: its newest job
            assert (await call(client, "stop_job", {"job": "sub"}))["job"] == newer
            admitted = (await client.read_resource(f"starforge://jobs/{job}/jobspec")).contents[0]
            assert f'"owner": "{name}"' in getattr(admitted, "text", "")
            stopped = await call(client, "stop_job", {"job": job})
            assert stopped == {"job": job, "stopped": True, "status": "stopped", "raw": stopped["raw"]}
            again = await call(client, "stop_job", {"job": job})
            assert again["stopped"] is False and again["status"] == "stopped"
            bad = await call(client, "submit_job", {"spec": spec, "bundle_base64": "not base64!"}, ok=False)
            assert bad["error"] == "Refused" and bad["problems"][0]["field"] == "bundle_base64"

    run(body)


def test_pause_resume_and_retry(world: World, kind: str) -> None:
    name, token = world.account("ctl")
    spec = world.spec(token, exp="experiments/ctl")

    async def body() -> None:
        async with session(world, kind, token) as client:
            job = (await call(client, "submit_job", {"spec": spec, "profile": "h200"}))["job_id"]  # waits: no h200
            shown = await call(client, "get_job", {"job": job})
            assert (shown["job"]["attempts"], shown["job"]["resumed_from"]) == (0, None)
            assert "events" not in shown["job"] and shown["job"]["queue_position"] >= 1  # the detail, minus history
            paused = await call(client, "pause_job", {"job": "ctl"})
            assert (paused["job"], paused["action"], paused["done"], paused["status"]) == (job, "pause", True, "paused")
            assert paused["paused"] is True
            assert (await call(client, "get_job", {"job": job}))["job"]["status"] == "paused"
            refused = await call(client, "retry_job", {"job": job}, ok=False)
            assert refused["status"] == 409 and "only a failed or stopped job can be retried" in refused["detail"]
            resumed = await call(client, "resume_job", {"job": job})
            assert (resumed["done"], resumed["status"]) == (True, "queued")
            assert (await call(client, "resume_job", {"job": job}))["done"] is False  # not paused: nothing to do
            assert (await call(client, "stop_job", {"job": job}))["stopped"] is True
            retried = await call(client, "retry_job", {"job": job})
            assert (retried["action"], retried["retried"], retried["status"]) == ("retry", True, "queued")
            assert (await call(client, "stop_job", {"job": job}))["stopped"] is True

    run(body)


def test_get_job_says_the_attempts_and_the_checkpoint_it_resumed_from(world: World, kind: str) -> None:
    _name, token = world.account("att")
    job = world.ended_job(token, "x\n", exp="experiments/att")
    with world.rt.db.write() as db:  # two attempts, the second resumed from a checkpoint at step 20
        row = db.get(Job, job)
        assert row is not None
        checkpoint = Path(row.run_dir) / "out" / "checkpoint-20"
        checkpoint.mkdir(parents=True, exist_ok=True)
        attempts.begin_attempt(db, row, resume=None, now=100.0)
        attempts.end_attempt(db, row, outcome="preempted", reason="preempted by r-x", now=150.0)
        attempts.begin_attempt(db, row, resume=attempts.ResumePoint(checkpoint, 20), now=200.0)
        attempts.end_attempt(db, row, outcome="stopped", reason="stopped", now=250.0)

    async def body() -> None:
        async with session(world, kind, token) as client:
            result = await client.call_tool("get_job", {"job": job})
            shown = dict(result.structured_content or {})["job"]
            assert shown["attempts"] == 2 and shown["resume_step"] == 20
            assert shown["resumed_from"].endswith("/out/checkpoint-20")
            assert [a["outcome"] for a in shown["attempt_history"]] == ["preempted", "stopped"]
            text = getattr(result.content[0], "text", "")
            assert f"attempt 2, resumed from {shown['resumed_from']} at step 20" in text

    run(body)


def test_log_windows_of_an_ended_job(world: World, kind: str) -> None:
    _name, token = world.account("logs")
    job = world.ended_job(token, LOG)

    async def body() -> None:
        async with session(world, kind, token) as client:
            tail = await call(client, "get_job_logs", {"job": job, "tail": 3})
            assert tail["text"] == "".join(LOG.splitlines(keepends=True)[-3:])
            assert tail["ended"] is True and tail["status"] == "stopped" and tail["last_event_id"] == str(len(LOG))
            cut = await call(client, "get_job_logs", {"job": job, "tail": 0, "max_bytes": 1024})
            assert cut["truncated"] is True and cut["bytes"] <= 1024 and LOG.endswith(cut["text"])
            assert cut["text"].startswith("step ") and "cut the first" in cut["note"]
            text, last, calls = "", "0", 0
            while True:  # an agent polling from the last event id reads everything, once
                window = await call(client, "get_job_logs", {"job": job, "from_event_id": last, "max_bytes": 1024})
                text, last, calls = text + window["text"], window["last_event_id"], calls + 1
                assert window["bytes"] <= 1024
                if window["ended"]:
                    break
                assert window["truncated"] is True and f"from_event_id={last}" in window["note"]
            assert text == LOG and last == str(len(LOG)) and calls >= 4
            refused = await call(client, "get_job_logs", {"job": job, "from_event_id": "x"}, ok=False)
            assert refused["error"] == "Rejected" and refused["problems"][0]["field"] == "from"

    run(body)


def test_a_viewer_reads_but_cannot_submit_or_stop(world: World, kind: str) -> None:
    _owner, owner_token = world.account("own")
    job = world.ended_job(owner_token, "x\n", exp="experiments/owned")
    _name, viewer = world.account("view", role="viewer")
    spec = world.spec(viewer)

    async def body() -> None:
        async with session(world, kind, viewer) as client:
            assert (await call(client, "get_quota"))["user"]["role"] == "viewer"
            assert (await call(client, "list_jobs"))["jobs"] == []
            assert (await call(client, "validate_jobspec", {"spec": spec, "profile": "h200"}))["ok"] is True
            refused = await call(client, "submit_job", {"spec": spec, "profile": "h200"}, ok=False)
            assert refused["status"] == 403 and refused["error"] == "Forbidden" and "viewer" in refused["detail"]
            hidden = await call(client, "stop_job", {"job": job}, ok=False)
            assert hidden["error"] == "NotFound"  # another account's job does not exist for the caller

    run(body)


def test_another_users_job_stays_invisible(world: World, kind: str) -> None:
    _owner, owner_token = world.account("mine")
    job = world.ended_job(owner_token, "secret\n", exp="experiments/mine")
    _other, other_token = world.account("other")

    async def body() -> None:
        async with session(world, kind, other_token) as client:
            assert (await call(client, "list_jobs"))["jobs"] == []
            for tool in ("get_job", "get_job_logs", "stop_job", "pause_job", "resume_job", "retry_job"):
                error = await call(client, tool, {"job": job}, ok=False)
                assert error["error"] == "NotFound" and "secret" not in str(error), (tool, error)
            with pytest.raises(MCPError):
                await client.read_resource(f"starforge://jobs/{job}/jobspec")

    run(body)


def test_both_backends_answer_with_the_same_data(world: World) -> None:
    _name, token = world.account("same")
    job = world.ended_job(token, LOG, exp="experiments/same")
    spec = world.spec(token, exp="experiments/same")
    spec["spec"]["hyperparams"] = {"max_num_steps": 0}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get_quota", {}), ("cluster_status", {}), ("list_recipes", {}), ("show_recipe", {"recipe": "tinyrl/grpo"}),
        ("validate_jobspec", {"spec": spec, "profile": "h200"}), ("explain_rejection", {"spec": spec}),
        ("list_jobs", {}), ("get_job", {"job": job}), ("get_job_logs", {"job": job, "tail": 10}),
        ("get_job_logs", {"job": job, "tail": 0, "max_bytes": 1024}),
        ("get_job_logs", {"job": job, "from_event_id": "1000", "max_bytes": 1024}),
        ("stop_job", {"job": job}), ("get_job", {"job": "nope"}),
    ]

    async def answers(kind: str) -> list[dict[str, Any]]:
        async with session(world, kind, token) as client:
            return [dict((await client.call_tool(name, args)).structured_content or {}) for name, args in calls]

    results: dict[str, list[dict[str, Any]]] = {}

    async def body() -> None:
        for kind in ("http", "stdio"):
            results[kind] = await answers(kind)

    run(body)
    for (name, args), served, stdio in zip(calls, results["http"], results["stdio"], strict=True):
        assert served == stdio, (name, args)


@pytest.mark.parametrize(("log", "same_windows"), [
    ("a\nb\npartial", True),                      # a last line without its line end
    ("x" * 3000 + "\nshort\n", True),             # a line longer than the window
    ("é" * 700 + "\n" + "é" * 900, True),          # multi-byte text cut inside lines
    ("crlf\r\nline\r\n" + "é" * 700 + "\n", False),  # line ends normalised: text and log bytes differ
], ids=["partial-line", "long-line", "utf8", "crlf"])
def test_log_edges_read_the_same_on_both_backends(world: World, log: str, same_windows: bool) -> None:
    _name, token = world.account("edge")
    job = world.ended_job(token, log, exp="experiments/edge")

    async def windows(kind: str) -> list[dict[str, Any]]:
        out = []
        async with session(world, kind, token) as client:
            out.append(await call(client, "get_job_logs", {"job": job, "tail": 0, "max_bytes": 1024}))
            last, size = "0", 1024
            for _ in range(10):  # an agent following the notes: continue from the last id, or ask for more bytes
                window = await call(client, "get_job_logs", {"job": job, "from_event_id": last, "max_bytes": size})
                out.append(window)
                last = window["last_event_id"]
                size = MAX_LOG_BYTES if f"max_bytes={MAX_LOG_BYTES}" in window["note"] else size
                if window["ended"]:
                    break
        return out

    results: dict[str, list[dict[str, Any]]] = {}

    async def body() -> None:
        for kind in ("http", "stdio"):
            results[kind] = await windows(kind)

    run(body)
    expected = log.replace("\r\n", "\n")
    for kind in ("http", "stdio"):
        assert "".join(w["text"] for w in results[kind][1:]) == expected and results[kind][-1]["ended"] is True
    assert results["http"][0] == results["stdio"][0]  # the tail window
    if same_windows:
        assert results["http"] == results["stdio"]
