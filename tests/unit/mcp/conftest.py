"""An in-process console (SQLite in a temporary state directory, no background loop) and MCP sessions on it through
either backend: `http` is the console's own endpoint (`/api/mcp/rpc`, bearer token, service backend) and `stdio` is
the client backend `sf mcp` uses, talking to the same console's REST API through an in-process transport."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from starforge.client import Console
from starforge.console import operator
from starforge.console.app import create_app
from starforge.console.services.context import Runtime
from starforge.console.services.logs import store as logs
from starforge.console.settings import load_settings
from starforge.console.store.models import Job
from starforge.mcp import SharedBackend, build_server
from starforge.mcp.stdio import STDIO_TOOLS, ClientBackend
from tests.integration import helpers

URL = "http://console.test"
KINDS = ("http", "stdio")
COMMON = {"validate_jobspec", "explain_rejection", "list_recipes", "show_recipe", "submit_job", "list_jobs", "get_job",
          "get_job_logs", "stop_job", "pause_job", "resume_job", "retry_job", "get_quota", "cluster_status"}
LAB = {"build_jobspec", "recipe_status"}
_names = itertools.count()


@dataclass
class World:
    """The console under test, its runtime, and a REST client of it."""

    app: FastAPI
    rt: Runtime
    rest: TestClient

    def account(self, prefix: str, role: str = "operator") -> tuple[str, str]:
        """Create an account and return its name and an API token."""
        name = f"{prefix}{next(_names)}"
        return name, operator.create_token(self.rt.db, name, role, create=True)

    def api(self, token: str) -> TestClient:
        """Return a REST client carrying `token`."""
        return TestClient(self.app, headers={"Authorization": f"Bearer {token}"})

    def spec(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """Return a valid spec from the console's catalog (on the h200 series: it waits here, nothing runs)."""
        kwargs.setdefault("series", "h200")
        return helpers.spec_for(self.api(token), **kwargs)

    def ended_job(self, token: str, log: str, *, exp: str = "experiments/logged") -> str:
        """Submit a job, give it a run directory holding `log`, stop it (it waits, so it stops at once); return it."""
        files = helpers.bundle({f"{exp}/config.yaml": "grpo:\n  max_num_steps: 5\n"})
        answer = helpers.submit(self.api(token), self.spec(token, exp=exp), data=files, profile="h200")
        helpers.admitted(answer)
        job_id = str(answer.json()["job_id"])
        run_dir = self.rt.settings.state_dir / "runs" / job_id
        with self.rt.db.write() as db:  # the scheduler would set it at launch; nothing launches here
            row = db.get(Job, job_id)
            assert row is not None
            row.run_dir = str(run_dir)
        logs.append(self.rt.logs, run_dir, log)
        assert self.api(token).post("/api/job/stop", params={"id": job_id}).json()["stopped"] is True
        return job_id


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    state: Path = tmp_path_factory.mktemp("console")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
        app = create_app(load_settings(state_dir=state, run_background=False, capacity={"cpu": 1},
                                      unplaceable="queue"))  # h200 jobs wait as pending
    rt: Runtime = app.state.runtime
    yield World(app, rt, TestClient(app))
    rt.db.dispose()


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


def client_backend(world: World, token: str, lab: Path | None = None) -> ClientBackend:
    """Return the stdio backend for `token`, reaching the in-process console."""
    transport = helpers.forwarding(world.rest)
    return ClientBackend(lambda through: Console(URL, token, transport=through or transport),
                         network=lambda _url: transport, lab=lab)


@asynccontextmanager
async def session(world: World, kind: str, token: str, *, lab: Path | None = None) -> AsyncIterator[Client]:
    """An MCP session as `token`'s account: over the console's endpoint (`http`) or the stdio backend (`stdio`)."""
    if kind == "http":
        async with world.app.router.lifespan_context(world.app), \
                httpx2.AsyncClient(transport=httpx2.ASGITransport(world.app),
                                   headers={"Authorization": f"Bearer {token}"}) as http, \
                Client(streamable_http_client(URL + "/api/mcp/rpc", http_client=http)) as client:
            yield client
        return
    backend = client_backend(world, token, lab)
    try:
        async with Client(build_server(SharedBackend(backend), tools=STDIO_TOOLS)) as client:
            yield client
    finally:
        backend.close()


async def call(client: Client, name: str, args: dict[str, Any] | None = None, *, ok: bool = True) -> dict[str, Any]:
    """Call a tool, assert whether it ended as a tool error, and return its structured content."""
    result = await client.call_tool(name, args or {})
    assert isinstance(result, CallToolResult)
    assert bool(result.is_error) is (not ok), (name, result.content[0].text if result.content else result)
    assert result.structured_content is not None
    return dict(result.structured_content)
