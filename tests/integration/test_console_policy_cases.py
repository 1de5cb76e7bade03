"""The `policy` conformance cases against a console serving the official 0.3.56 catalog."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from starforge.console.services.errors import Conflict
from tests.conftest import load_cases
from tests.integration.conftest import ConsoleProcess, make_console, unique
from tests.integration.helpers import admitted, submit


@pytest.fixture(scope="module")
def official_console(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.official import official_catalog

    config = {
        "catalog": {"path": str(official_catalog("0.3.56")), "digest_scheme": "manifest",
                    "core_version": "0.3.56", "core_requirement": ">=0.3.56,<0.4"},
        "profiles": [{"name": "h200", "series": "h200", "num_nodes": 1, "gpus_per_node": 8},
                     {"name": "h100", "series": "h100", "num_nodes": 1, "gpus_per_node": 8},
                     {"name": "cpu", "series": "cpu", "num_nodes": 1, "gpus_per_node": 1}],
        "image_allowlist": ["nvcr.io", "registry.internal:5000"],
        "run_background": False,
    }
    proc = make_console(tmp_path_factory, "sqlite", config=config)
    proc.start()
    yield proc
    proc.stop()


@pytest.mark.parametrize("case", load_cases("policy"), ids=lambda c: c["name"])
def test_policy_case(official_console: ConsoleProcess, case: dict[str, Any]) -> None:
    name = unique("pol")
    token = official_console.token_for(name)
    caps = {k: v for k, v in case["context"].items() if k != "image_allowlist"}
    if caps:
        with official_console.client(official_console.admin_token) as admin:
            assert admin.post("/api/admin/quotas", json={"username": name, **caps}).status_code == 200
    if "image_allowlist" in case["context"]:
        assert case["context"]["image_allowlist"] == ["nvcr.io", "registry.internal:5000"]
    with official_console.client(token) as api:
        response = submit(api, case["spec"], profile="h200")
    if case["expect"] == "accept":
        admitted(response, "pending")  # h200 has no capacity here
    else:
        assert response.status_code == 400, response.text
        assert response.json()["problems"][0]["field"] == case["field"]


def _register_datasets(console: ConsoleProcess, spec: dict[str, Any], tmp_path: Any) -> None:
    """Register (public) every dataset a case references, so the policy stage finds them."""
    data = spec.get("spec", {}).get("data", {}) or {}
    for split in ("train", "validation"):
        ref = (data.get(split) or {}).get("dataset")
        if ref:
            directory = tmp_path / ref.replace("/", "_").replace("@", "_")
            directory.mkdir(exist_ok=True)
            if "@" not in ref:
                ref += "@v1"
            with contextlib.suppress(Conflict):  # cases share datasets: versions are registered once
                console.add_data("dataset", ref, directory, public=True)


@pytest.mark.parametrize("case", load_cases("catalog", "admission"), ids=lambda c: c["name"])
def test_catalog_and_admission_cases_over_the_wire(
    official_console: ConsoleProcess, case: dict[str, Any], tmp_path: Any
) -> None:
    """The console refuses exactly what the shared verdict refuses (one implementation, over HTTP)."""
    _register_datasets(official_console, case["spec"], tmp_path)
    name = unique("cat")
    token = official_console.token_for(name)
    with official_console.client(official_console.admin_token) as admin:
        admin.post("/api/admin/quotas", json={"username": name, "max_concurrent_gpus": 64})
    with official_console.client(token) as api:
        verdict = api.post("/api/admission/check", json={"spec": case["spec"]}).json()
    if case["expect"] == "accept":
        assert verdict["ok"], verdict["problems"]
    else:
        assert verdict["problems"][0]["field"] == case["field"]
