"""Shared test fixtures: conformance cases, service discovery (loud skips; CI requires every service)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFORMANCE = REPO / "tests" / "conformance" / "jobspec-cases.jsonl"

_skipped_services: dict[str, str] = {}
_SERVICE_MARK = "\u00a7"  # brackets a missing service's name and remedy in a skip message (read back by the banner)

# `make test` runs pytest-xdist with `--dist loadscope --no-loadscope-reorder`: a module is one unit of work, and the
# units are handed out in collection order, which `pytest_collection_modifyitems` below makes longest first, so a
# long module never starts last and runs on alone while the other workers idle. Seconds per module in `make test`
# on the 2-core development machine (3 workers; the per-module totals of `--junitxml`); modules not listed take a
# few seconds at most and keep their collection order behind these. Only the order depends on these figures, and the
# order is measured too: modules that share a scarce thing (the TRL runtime's first build, the two Slurm nodes) start
# apart (a cold run ordered by its own figures took 734 s, against 640 s in this order).
UNIT_SECONDS: dict[str, float] = {
    "tests/integration/test_two_workers.py": 20,
    "tests/integration/test_leader_failover.py": 120,
    "tests/unit/console/test_leadership.py": 6,
    "tests/e2e/test_trl.py": 175,
    "tests/integration/test_serving.py": 50,
    "tests/compat/test_official_bench.py": 12,
    "tests/integration/test_benchmarks.py": 15,
    "tests/integration/test_metrics.py": 15,
    "tests/integration/test_notify.py": 50,
    "tests/unit/console/test_notify.py": 8,
    "tests/integration/test_mlflow_mirror.py": 75,
    "tests/unit/console/test_startup_imports.py": 5,
    "tests/e2e/test_resume.py": 90,  # 330 in a cold run; kept behind the TRL suite, which builds the TRL runtime
    "tests/e2e/test_benchmark_job.py": 75,  # 150 in a cold run, building the evalkit runtime
    "tests/e2e/test_slurm_nodes.py": 65,  # 105 in a cold run; kept apart from test_resume, both need both Slurm nodes
    "tests/compat/test_official_client.py": 110,
    "tests/integration/test_executor_conformance.py": 81,
    "tests/integration/test_hostile_schemathesis.py": 70,
    "tests/integration/test_runtimes.py": 60,
    "tests/e2e/test_engines.py": 44,
    "tests/e2e/test_ray_nodes.py": 28,
    "tests/integration/test_cli_recipes.py": 42,
    "tests/integration/test_console_hardening.py": 41,
    "tests/e2e/test_researcher_path.py": 38,
    "tests/e2e/test_playground_browser.py": 43,
    "tests/integration/test_job_sandbox.py": 34,
    "tests/e2e/test_engine_images.py": 22,
    "tests/integration/test_job_images.py": 20,
    "tests/security/test_quota_race.py": 34,
    "tests/security/test_odd_input.py": 34,
    "tests/security/test_auth_matrix.py": 33,
    "tests/integration/test_mcp.py": 32,
    "tests/security/test_kill_storm.py": 29,
    "tests/compat/test_official_lifecycle.py": 28,
    "tests/integration/test_datasets.py": 27,
    "tests/e2e/test_web_browser.py": 26,
    "tests/e2e/test_web_log.py": 12,
    "tests/unit/trainers/test_trl_resume.py": 25,
    "tests/e2e/test_lifecycle_e2e.py": 20,
    "tests/integration/test_console_quota.py": 19,
    "tests/integration/test_cli_jobs.py": 19,
    "tests/integration/test_run_provenance.py": 9,
    "tests/e2e/test_web_diff.py": 10,
    "tests/integration/test_console_restart.py": 19,
    "tests/integration/test_console_running.py": 18,
    "tests/integration/test_cli_account.py": 17,
    "tests/security/test_idempotency_restart.py": 17,
    "tests/e2e/test_sweep_e2e.py": 17,
    "tests/unit/runner/test_launch.py": 14,
    "tests/integration/test_console_auth.py": 13,
    "tests/unit/mcp/test_backends.py": 12,
    "tests/unit/cli/test_missing_extras.py": 11,
    "tests/integration/test_sdk_docs.py": 11,
    "tests/integration/test_artifacts_cli.py": 11,
    "tests/integration/test_cli_serve.py": 11,
    "tests/unit/bundle/test_properties.py": 10,
    "tests/unit/mcp/test_console_boundary.py": 10,
    "tests/unit/tinyrl/test_training.py": 9,
    "tests/unit/contract/test_properties.py": 8,
    "tests/unit/cli/test_lab_commands.py": 8,
    "tests/integration/test_honest_queue.py": 8,
    "tests/e2e/test_registries_e2e.py": 8,
    "tests/integration/test_web_pages.py": 8,
    "tests/integration/test_web_jobs_list.py": 4,
    "tests/e2e/test_web_jobs.py": 13,
    "tests/integration/test_cli_admin.py": 8,
    "tests/unit/mcp/test_lazy_imports.py": 7,
    "tests/security/test_hostile_bundles.py": 7,
    "tests/integration/test_hot_path.py": 7,
    "tests/e2e/test_catalog_and_pools.py": 7,
    "tests/unit/lab/test_lab_boundary.py": 7,
    "tests/e2e/test_web_compare.py": 7,
    "tests/integration/test_one_verdict.py": 6,
    "tests/integration/test_sweeps.py": 6,
    "tests/integration/test_hostile_parsing.py": 6,
    "tests/integration/test_client_sdk.py": 6,
    "tests/unit/bundle/test_hostile.py": 6,
    "tests/integration/test_console_ingest.py": 6,
    "tests/unit/recipes/test_digests.py": 5,
    "tests/integration/test_cli_plugins.py": 5,
    "tests/integration/test_brief_example.py": 5,
    "tests/integration/test_hostile_uploads.py": 5,
    "tests/unit/cli/test_startup_imports.py": 5,
    "tests/integration/test_render_kuberay.py": 5,
    "tests/integration/test_web_sweeps_admin.py": 5,
    "tests/unit/console/runtimes/test_cache.py": 4,
    "tests/integration/test_web_compare.py": 2,
}


TRAINER_SLOTS = 2  # real trainings at once on this 2-core machine, whatever the number of workers


@pytest.fixture
def trainer_slot() -> Iterator[None]:
    """Hold one of this machine's trainer slots for one test: at most TRAINER_SLOTS real trainings (TRL, torch
    ranks) run at once. On two cores, four at once each ran ten times slower than alone (a job then waits out its
    own timeouts and grace periods); one at a time made them the suite's critical path."""
    import fcntl
    import tempfile

    paths = [os.path.join(tempfile.gettempdir(), f"starforge-trainer-{i}.lock") for i in range(TRAINER_SLOTS)]
    handles = [open(path, "a") for path in paths]  # noqa: SIM115 (closed below, whichever is held)
    try:
        for handle in handles:  # a free slot if there is one...
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                continue
        else:  # ...else wait for this worker's own (the lock is the event: no polling)
            fcntl.flock(handles[os.getpid() % TRAINER_SLOTS], fcntl.LOCK_EX)
        yield
    finally:
        for handle in handles:
            handle.close()  # closing releases a held lock


@pytest.fixture(scope="session", autouse=True)
def _private_forge_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point FORGE_HOME at a session directory and clear FORGE_RECIPE_PATH, so no test reads the user's state."""
    home = tmp_path_factory.mktemp("forge-home")
    saved = {k: os.environ.get(k) for k in ("FORGE_HOME", "FORGE_RECIPE_PATH")}
    os.environ["FORGE_HOME"] = str(home)
    os.environ.pop("FORGE_RECIPE_PATH", None)
    yield home
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.hookimpl(trylast=True)  # after pytest has grouped the items by their fixtures
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the longest modules first (see UNIT_SECONDS); a module's tests stay together and in their order."""
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(item.nodeid.split("::", 1)[0], index)

    def unit(item: pytest.Item) -> tuple[float, int]:
        module = item.nodeid.split("::", 1)[0]
        return -UNIT_SECONDS.get(module, 0.0), first[module]

    items.sort(key=unit)


def load_cases(*layers: str) -> list[dict[str, Any]]:
    """Return the conformance cases (tests/conformance) of the given layers (all when none is given)."""
    cases = [json.loads(line) for line in CONFORMANCE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [c for c in cases if not layers or c["layer"] in layers]


def _service_env() -> dict[str, str]:
    values: dict[str, str] = {}
    env_file = REPO / ".services" / "env"
    if env_file.is_file():
        for line in env_file.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip():
                values[key.strip()] = value.strip()
    return values


def service_unavailable(name: str, message: str, how: str) -> NoReturn:
    """Skip loudly (listed in the end-of-run banner), or fail under CI where every service must be present."""
    if os.environ.get("STARFORGE_REQUIRE_SERVICES") == "1":
        pytest.fail(f"STARFORGE_REQUIRE_SERVICES=1 but {message}")
    _skipped_services[name] = how
    pytest.skip(f"{_SERVICE_MARK}{name}{_SERVICE_MARK}{how}{_SERVICE_MARK} {message}")


def require_service(name: str, variable: str, how: str) -> str:
    """Return the service address from the environment or .services/env; skip loudly, or fail under CI."""
    value = os.environ.get(variable) or _service_env().get(variable, "")
    if value:
        return value
    service_unavailable(name, f"{name} is not available ({variable} unset): {how}", how)


def require_bubblewrap() -> str:
    """Return bubblewrap's path; skip loudly without it (the job sandbox's suites), or fail under CI."""
    import shutil

    found = shutil.which("bwrap")
    if found:
        return found
    service_unavailable("bubblewrap", "bubblewrap (bwrap) is not installed: the job sandbox cannot be tested",
                        "run `scripts/services.sh up` (installs Debian's bubblewrap)")


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    """The URL of a PostgreSQL server's maintenance database (provisioned by scripts/services.sh)."""
    return require_service("PostgreSQL", "STARFORGE_TEST_POSTGRES_URL", "run `scripts/services.sh up` (or make services)")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    # test workers (pytest-xdist) skip in their own processes: read the missing services back from the skip reports
    for report in terminalreporter.stats.get("skipped", []):
        text = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        parts = text.split(_SERVICE_MARK)
        if len(parts) >= 4:
            _skipped_services.setdefault(parts[1], parts[2])
    if _skipped_services:
        terminalreporter.write_sep("!", "SUITES SKIPPED FOR MISSING SERVICES", red=True, bold=True)
        for name, how in _skipped_services.items():
            terminalreporter.write_line(f"  {name}: {how}", red=True, bold=True)
        terminalreporter.write_line("  CI (.ci/run) provisions every service and skips none.", red=True)
