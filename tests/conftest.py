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
SHARED_CONFORMANCE = REPO.parent / "shared" / "conformance" / "jobspec-cases.jsonl"

_skipped_services: dict[str, str] = {}
_SERVICE_MARK = "\u00a7"  # brackets a missing service's name and remedy in a skip message (read back by the banner)


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


def load_cases(*layers: str) -> list[dict[str, Any]]:
    """Return the shared conformance cases of the given layers (all when none is given)."""
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
