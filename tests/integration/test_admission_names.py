"""Names that become path components are refused at admission, at their field, and account names are safe.

An in-process console (the real app over its ASGI interface, SQLite in a temporary state directory, no
background loops): what is tested is admission's verdict, not the process around it.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.integration.helpers import admitted, spec_for, submit

DIGEST = "sha256:" + "0" * 64


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, str]]:
    """The console app and its administrator token."""
    from starforge.console.app import bootstrap_admin, build_console, create_app
    from starforge.console.settings import Settings

    state = Path(tmp_path_factory.mktemp("names")) / "state"
    settings = Settings(state_dir=state, capacity={"cpu": 2}, run_background=False)
    built = build_console(settings)
    runtime = built.runtime
    admin_token = bootstrap_admin(runtime)
    assert admin_token
    with TestClient(create_app(settings, built)) as client:
        yield client, admin_token


def _new_user(console: tuple[TestClient, str], name: str) -> Any:
    client, admin_token = console
    return client.post("/api/admin/users", json={"username": name},
                       headers={"Authorization": f"Bearer {admin_token}"})


@pytest.fixture(scope="module")
def api(console: tuple[TestClient, str]) -> TestClient:
    client, _ = console
    created = _new_user(console, f"u{uuid.uuid4().hex[:8]}")
    assert created.status_code == 200, created.text
    client.headers["Authorization"] = f"Bearer {created.json()['token']}"
    return client


@pytest.fixture(scope="module")
def valid(api: TestClient) -> dict[str, Any]:
    return spec_for(api)


def _refused(api: TestClient, spec: dict[str, Any]) -> list[tuple[str, str]]:
    response = submit(api, spec)
    assert response.status_code == 400, response.text
    body = response.json()
    assert all(p["hint"] for p in body["problems"] if p["code"] == "unsafe_path_component")
    return [(p["field"], p["code"]) for p in body["problems"]]


def _with(valid: dict[str, Any], *, name: str | None = None, project: str | None = None, exp: str | None = None,
          plugins: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec = copy.deepcopy(valid)
    if name is not None:
        spec["metadata"]["name"] = name
    if project is not None:
        spec["metadata"]["project"] = project
    if exp is not None:
        spec["spec"]["source"]["exp"] = exp
    if plugins is not None:
        spec["spec"]["plugins"] = plugins
    return spec


def test_a_normal_spec_is_still_admitted(api: TestClient, valid: dict[str, Any]) -> None:
    response = submit(api, valid)
    admitted(response, "submitted")
    checked = api.post("/api/admission/check", json={"spec": _with(valid, name="a" * 100, project="lab.v2_x-1",
                                                                   exp="experiments/" + "e" * 100)}).json()
    assert checked["ok"], checked["problems"]


@pytest.mark.parametrize("length", [101, 200, 300])
def test_a_long_run_name_is_refused_at_metadata_name(api: TestClient, valid: dict[str, Any], length: int) -> None:
    [(field, code)] = _refused(api, _with(valid, name="n" * length))
    # beyond 255 the contract itself refuses; below it, the console's path-component policy does
    assert (field, code) == ("metadata.name", "name_too_long" if length > 255 else "unsafe_path_component")


@pytest.mark.parametrize("exp", ["experiments/" + "x" * 300, "x" * 101 + "/toy",
                                 "experiments/" + "/".join(["p" * 90] * 3)])
def test_a_long_experiment_path_is_refused_at_spec_source_exp(api: TestClient, valid: dict[str, Any], exp: str) -> None:
    problems = _refused(api, _with(valid, exp=exp))  # a too-long part, the whole path too long, or both
    assert problems and set(problems) == {("spec.source.exp", "unsafe_path_component")}


@pytest.mark.parametrize("project", ["-x", "..x", ".lab_2", "_scratch", "p" * 101])
def test_an_unsafe_project_is_refused_at_metadata_project(api: TestClient, valid: dict[str, Any], project: str) -> None:
    assert _refused(api, _with(valid, project=project)) == [("metadata.project", "unsafe_path_component")]


def test_a_plugin_owner_that_is_too_long_is_refused_at_its_id(api: TestClient, valid: dict[str, Any]) -> None:
    plugins = [{"id": "alice/tool", "version": "1.0.0", "digest": DIGEST},
               {"id": "o" * 101 + "/other", "version": "1.0.0", "digest": DIGEST}]
    problems = _refused(api, _with(valid, plugins=plugins))
    assert problems[0] == ("spec.plugins[1].id", "unsafe_path_component")
    assert ("spec.plugins[0]", "plugin_unknown") in problems  # later policy checks still report


def test_every_name_problem_is_reported_at_once_in_field_order(api: TestClient, valid: dict[str, Any]) -> None:
    spec = _with(valid, name="n" * 150, project="-x", exp="experiments/" + "e" * 150,
                 plugins=[{"id": "o" * 120 + "/" + "t" * 120, "version": "1.0.0", "digest": DIGEST}])
    problems = [p for p in _refused(api, spec) if p[1] == "unsafe_path_component"]
    assert [field for field, _ in problems] == ["metadata.name", "metadata.project", "spec.plugins[0].id",
                                                "spec.plugins[0].id", "spec.source.exp"]
    checked = api.post("/api/admission/check", json={"spec": spec}).json()
    assert not checked["ok"] and checked["problems"][0]["field"] == "metadata.name"
    assert "n" * 30 not in checked["problems"][0]["message"]  # a long name is shown shortened


# ---- account names ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "code"), [
    ("u" * 65, "unsafe_path_component"),
    ("-x", "not_a_safe_segment"),
    ("..x", "not_a_safe_segment"),
    ("a/b", "not_a_safe_segment"),
])
def test_account_names_are_short_safe_segments(console: tuple[TestClient, str], name: str, code: str) -> None:
    response = _new_user(console, name)
    assert response.status_code == 400, response.text
    assert [(p["field"], p["code"]) for p in response.json()["problems"]] == [("username", code)]


def test_account_names_differing_only_in_case_are_refused(console: tuple[TestClient, str]) -> None:
    base = f"casey{uuid.uuid4().hex[:8]}"
    assert _new_user(console, base).status_code == 200
    assert _new_user(console, "u" * 64).status_code == 200
    clash = _new_user(console, base.capitalize())
    assert clash.status_code == 409 and base in clash.json()["detail"]
