"""`/api/mcp/rpc` on an in-process console: the bearer token is checked before any MCP code runs, and the tools then
run on the console's services as that account (no loopback: nothing listens on the console's address here)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.unit.mcp.conftest import URL, World, call, session

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_no_valid_token_no_mcp(world: World) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    for extra in ({}, {"Authorization": "Bearer sfp_not-a-token"}, {"Authorization": "Basic abc"}):
        answer = world.rest.post("/api/mcp/rpc", json=INITIALIZE, headers={**headers, **extra})
        assert answer.status_code == 401, answer.text
        assert answer.headers["www-authenticate"] == "Bearer"
        assert answer.json()["problems"] == [] and answer.json()["detail"]
    assert world.rest.get("/api/mcp/rpc").status_code == 401

    async def body() -> None:
        async with world.app.router.lifespan_context(world.app), \
                httpx2.AsyncClient(transport=httpx2.ASGITransport(world.app)) as http:
            with anyio.fail_after(30), pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 401
                async with Client(streamable_http_client(URL + "/api/mcp/rpc", http_client=http)):
                    pass

    anyio.run(body)


def test_each_request_runs_as_its_own_token(world: World) -> None:
    alice, alice_token = world.account("alice")
    bob, bob_token = world.account("bob", role="viewer")
    seen: dict[str, Any] = {}

    async def body() -> None:
        async with session(world, "http", alice_token) as client:
            seen["alice"] = (await call(client, "get_quota"))["user"]
        async with session(world, "http", bob_token) as client:
            seen["bob"] = (await call(client, "get_quota"))["user"]

    anyio.run(body)
    assert seen == {"alice": {"username": alice, "role": "operator"}, "bob": {"username": bob, "role": "viewer"}}


def test_the_lab_tools_are_stdio_only_and_need_a_lab(world: World) -> None:
    _name, token = world.account("nolab")

    async def body() -> None:
        async with session(world, "http", token) as client:
            unknown = await client.call_tool("recipe_status", {})
            assert unknown.is_error  # not served over HTTP at all
        async with session(world, "stdio", token) as client:
            refused = await call(client, "recipe_status", {}, ok=False)
            assert refused["error"] == "Refused" and refused["problems"][0]["field"] == "lab"

    anyio.run(body)
