"""The tools are defined once: both transports list them with input and output schemas (stdio adds the lab tools)."""

from __future__ import annotations

from typing import Any

import anyio

from starforge.mcp import TOOLS, SharedBackend, build_server
from starforge.mcp.stdio import LAB_TOOLS, STDIO_TOOLS
from tests.unit.mcp.conftest import COMMON, LAB


class Unused:
    """A backend nothing may call: listing needs no console."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"listing called the backend ({name})")


def _listing(tools: Any) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    server = build_server(SharedBackend(Unused()), tools=tools)

    async def main() -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        return (await server.list_tools(), await server.list_resources(), await server.list_resource_templates(),
                await server.list_prompts())

    return anyio.run(main)


def test_http_lists_the_common_tools_and_stdio_adds_the_lab_tools() -> None:
    assert {t.name for t in _listing(TOOLS)[0]} == {t.name for t in TOOLS} == COMMON
    assert {t.name for t in _listing(STDIO_TOOLS)[0]} == COMMON | LAB == {t.name for t in TOOLS + LAB_TOOLS}


def test_every_tool_has_a_description_an_input_schema_and_an_output_schema() -> None:
    tools, resources, templates, prompts = _listing(STDIO_TOOLS)
    for tool in tools:
        assert tool.description and tool.input_schema["type"] == "object", tool.name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
        assert tool.annotations is not None
    by_name = {t.name: t for t in tools}
    logs = by_name["get_job_logs"].input_schema["properties"]
    assert logs["max_bytes"]["maximum"] == 256 * 1024 and by_name["get_job_logs"].input_schema["required"] == ["job"]
    assert by_name["submit_job"].annotations.read_only_hint is False
    assert by_name["stop_job"].annotations.destructive_hint is True
    for control in ("pause_job", "resume_job", "retry_job"):  # they change a job, and it can be undone
        assert by_name[control].annotations.read_only_hint is False, control
        assert by_name[control].annotations.destructive_hint is False, control
    assert by_name["retry_job"].annotations.idempotent_hint is False  # a second retry is refused
    assert by_name["list_jobs"].annotations.read_only_hint is True
    assert {str(r.uri) for r in resources} == {"starforge://schema/jobspec", "starforge://catalog"}
    assert [t.uri_template for t in templates] == ["starforge://jobs/{id}/jobspec"]
    assert [p.name for p in prompts] == ["fix_rejected_submission"]


def test_problems_declare_their_data() -> None:
    tools = {t.name: t for t in _listing(TOOLS)[0]}
    schema = tools["validate_jobspec"].output_schema
    assert schema is not None
    problem = schema["$defs"]["ProblemOut"]
    assert problem["properties"]["data"]["type"] == "object" and "data" not in problem.get("required", [])
    assert "allowed" in problem["properties"]["data"]["description"]
