"""Tool results: summary plus structured data; refusals as tool errors with the REST problems, never a trace."""

from __future__ import annotations

import json
from typing import Any

import anyio

from starforge.contract import Problem
from starforge.mcp import BackendError, Outcome, ToolRefusal, bound, kind_for_status
from starforge.mcp._results import failure, run_tool, success


def test_a_success_has_a_summary_the_data_as_json_and_the_structured_content() -> None:
    result = success(Outcome("2 jobs", {"jobs": [1, 2]}))
    assert not result.is_error
    assert [c.text for c in result.content] == ["2 jobs", json.dumps({"jobs": [1, 2]}, indent=1)]
    assert result.structured_content == {"jobs": [1, 2]}
    assert [c.text for c in success(Outcome("log text", {"text": "x"}, echo_data=False)).content] == ["log text"]


def test_a_rejection_carries_the_same_problems_as_the_rest_api() -> None:
    problems = [Problem("spec.recipe.digest", "recipe_digest_mismatch", "differs", "run sf recipe upgrade",
                        {"expected": "sha256:1"})]
    result = failure(BackendError("The submission was rejected", problems, status=400, kind=kind_for_status(400)))
    assert result.is_error
    data = result.structured_content
    assert data is not None
    assert data["ok"] is False and data["status"] == 400 and data["error"] == "Rejected"
    assert data["problems"] == [p.to_dict() for p in problems] and data["problems"][0]["data"] == {"expected": "sha256:1"}
    assert data["detail"] == "The submission was rejected\n- spec.recipe.digest: differs"
    text = result.content[0].text
    assert "spec.recipe.digest: differs" in text and "hint for spec.recipe.digest: run sf recipe upgrade" in text
    assert "explain_rejection" in text


def test_other_console_errors_and_refusals_keep_their_detail_and_hint() -> None:
    missing = failure(BackendError("no job matches 'x'", status=404, hint="list your jobs", kind="NotFound"))
    assert missing.structured_content is not None
    assert missing.structured_content["problems"] == [] and missing.structured_content["hint"] == "list your jobs"
    assert missing.content[0].text == "no job matches 'x'\nhint: list your jobs"
    refusal = failure(ToolRefusal("No lab here", [Problem("lab", "invalid_request", "needs a lab")]))
    assert refusal.structured_content is not None and refusal.structured_content["error"] == "Refused"
    assert "explain_rejection" not in refusal.content[0].text


def test_error_kinds_follow_the_http_status() -> None:
    assert [kind_for_status(s) for s in (400, 401, 403, 404, 409, 413, 422, 429, 503, None)] == [
        "Rejected", "AuthError", "Forbidden", "NotFound", "Rejected", "Rejected", "Rejected", "Unavailable",
        "Unavailable", "ConsoleError"]


def test_a_bug_becomes_a_generic_tool_error_without_the_trace() -> None:
    def broken(_backend: Any) -> Outcome:
        raise KeyError("secret internals")

    async def main() -> Any:
        with bound(object()):  # type: ignore[arg-type]  # the operation never touches it
            return await run_tool("get_job", broken)

    result = anyio.run(main)
    assert result.is_error and result.structured_content is not None
    assert result.structured_content["status"] == 500
    text = result.content[0].text
    assert "internal error in get_job" in text and "secret internals" not in text and "Traceback" not in text
