"""The tools are defined once: both transports list them with input and output schemas (stdio adds the lab tools)."""

from __future__ import annotations

from typing import Any

import anyio

from starforge.mcp import Backend, SharedBackend, build_server

COMMON = {"validate_jobspec", "explain_rejection", "list_recipes", "show_recipe", "submit_job", "list_jobs", "get_job",
          "get_job_logs", "stop_job", "get_quota", "cluster_status"}
LAB = {"build_jobspec", "recipe_status"}


def _unused(*_args: Any) -> Any:
    raise AssertionError("listing needs no console")


def _listing(lab_tools: bool) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    server = build_server(SharedBackend(Backend(connect=_unused, catalog=_unused)), lab_tools=lab_tools)

    async def main() -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        return (await server.list_tools(), await server.list_resources(), await server.list_resource_templates(),
                await server.list_prompts())

    return anyio.run(main)


def test_http_lists_the_common_tools_and_stdio_adds_the_lab_tools() -> None:
    http_tools = {t.name for t in _listing(False)[0]}
    stdio_tools = {t.name for t in _listing(True)[0]}
    assert http_tools == COMMON
    assert stdio_tools == COMMON | LAB


def test_every_tool_has_a_description_an_input_schema_and_an_output_schema() -> None:
    tools, resources, templates, prompts = _listing(True)
    for tool in tools:
        assert tool.description and tool.input_schema["type"] == "object", tool.name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
        assert tool.annotations is not None
    by_name = {t.name: t for t in tools}
    logs = by_name["get_job_logs"].input_schema["properties"]
    assert logs["max_bytes"]["maximum"] == 256 * 1024 and by_name["get_job_logs"].input_schema["required"] == ["job"]
    assert by_name["submit_job"].annotations.read_only_hint is False
    assert by_name["stop_job"].annotations.destructive_hint is True
    assert by_name["list_jobs"].annotations.read_only_hint is True
    assert {str(r.uri) for r in resources} == {"starforge://schema/jobspec", "starforge://catalog"}
    assert [t.uri_template for t in templates] == ["starforge://jobs/{id}/jobspec"]
    assert [p.name for p in prompts] == ["fix_rejected_submission"]
