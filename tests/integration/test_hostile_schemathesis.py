"""Property-based fuzzing of every operation in the console's own `/openapi.json`: no request may get a 5xx.

In process (schemathesis' ASGI transport: no socket is opened) on SQLite, with an operator's and a viewer's token,
cases drawn in positive and negative mode; derandomized, with a fixed number of examples per operation and role,
so a run is reproducible and bounded by examples, never by time. A second pass gives the operator's real job id to
every operation that takes one, so the job-specific code runs too; `GET /api/job/logs/stream` is left out of that
pass only, because for a job that never ends (no scheduler runs here) it follows the log forever, by design.

(Schemathesis' own pytest plugin, `schema.parametrize()`, does not run under pytest 9, hence the explicit loop.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from tests.integration.helpers import spec_for, submit
from tests.integration.test_hostile_parsing import InProcessConsole, build_console

EXAMPLES = 12  # per operation, role and pass: bounded by examples, about half a minute on the 2-core CI machine
# Operations that take no body: their input is the path and the query.
BODILESS = {("POST", "/api/job/stop"), ("POST", "/api/jobs/cancel-all"), ("POST", "/api/clean"),
            *(("POST", path.format(verb=verb)) for verb in ("pause", "resume", "retry")
              for path in ("/api/job/{verb}", "/api/jobs/{{ref}}/{verb}")),
            ("POST", "/api/sweeps/{sweep_id}/stop"),
            ("POST", "/api/services/{service_id}/stop"), ("POST", "/api/playground/{run_id}/stop"),
            ("POST", "/api/admin/maintenance/resume"),
            ("PATCH", "/api/admin/users/{username}/role"),
            ("PATCH", "/api/admin/users/{username}/disabled")}
STREAMS_FOREVER = ("GET", "/api/job/logs/stream")
JOB_PARAMETERS = {"id": "query", "ref": "path"}  # how operations name a job

schemathesis.serializer.alias("application/gzip", "application/octet-stream")  # bundles and plugin packages: bytes


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessConsole]:
    built = build_console(tmp_path_factory.mktemp("hostile-fuzz") / "state")
    yield built
    built.app.state.runtime.db.dispose()


def test_openapi_declares_every_body_and_bounds_every_count(console: InProcessConsole) -> None:
    """The fuzzer reaches only what the schema declares: every body a route reads, every integer's range."""
    with console.client(None) as client:
        paths = client.get("/openapi.json").json()["paths"]
    undeclared, unbounded = [], []
    for path, operations in paths.items():
        for method, operation in operations.items():
            if method in ("post", "put", "patch") and (method.upper(), path) not in BODILESS:
                undeclared += [] if "requestBody" in operation else [f"{method.upper()} {path}"]
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if schema.get("type") == "integer" and not {"minimum", "maximum"} <= set(schema):
                    unbounded.append(f"{method.upper()} {path} {parameter['name']}")
    assert (undeclared, unbounded) == ([], [])


def _fuzz(operation: Any, strategy: Any, failures: list[str]) -> None:
    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def run(case: Any) -> None:
        try:
            status = case.call().status_code
        except Exception as exc:  # the application raised through the transport: a 500 on a real server
            status = f"raised {exc!r}"
        if not isinstance(status, int) or status >= 500:
            failures.append(f"{operation.label} -> {status}: {case.as_curl_command()}")

    run()


def _strategy(operation: Any, **fixed: Any) -> Any:
    negative = operation.body or any(True for _ in operation.iter_parameters())  # something that can be broken
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE) if negative else (GenerationMode.POSITIVE,)
    return st.one_of([operation.as_strategy(mode, **fixed) for mode in modes])


def test_no_generated_request_gets_a_server_error(console: InProcessConsole) -> None:
    with console.client() as client:
        job = submit(client, spec_for(client, series="h200", gpus=8)).json()["job_id"]
    schema = schemathesis.openapi.from_asgi("/openapi.json", console.app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 30
    failures: list[str] = []
    for operation in operations:
        for role in ("operator", "viewer"):
            _fuzz(operation, _strategy(operation, headers={"Authorization": f"Bearer {console.tokens[role]}"}),
                  failures)
        names = {p.name: p.location for p in operation.iter_parameters()}
        known = {name: job for name, where in JOB_PARAMETERS.items() if names.get(name) == where}
        if known and (operation.method.upper(), operation.path) != STREAMS_FOREVER:
            where = "query" if "id" in known else "path_parameters"
            _fuzz(operation, operation.as_strategy(
                headers={"Authorization": f"Bearer {console.tokens['operator']}"}, **{where: known}), failures)
    assert failures == []
