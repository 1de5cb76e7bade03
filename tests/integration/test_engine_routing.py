"""One console, several engines: each series runs on the engine the configuration maps it to, and a job whose
pools would need two engines is refused at admission, at `spec.resources.pools`, with the reason.

An in-process console (the real app over its ASGI interface, SQLite, no background loops): what is tested is the
verdict of admission and the settings that route series; the engines themselves have their own suites.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from starforge.console.settings import Settings, SettingsError, load_settings
from starforge.engines import ExecState, JobRefused, ref_parts
from starforge.engines.routing import Engines
from tests.integration.helpers import spec_for, submit


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """A console whose h200 series runs on Slurm and every other series locally; a fresh user's client."""
    from starforge.console.app import bootstrap_admin, build_console, create_app

    state = Path(tmp_path_factory.mktemp("engines")) / "state"
    settings = Settings(state_dir=state, capacity={"cpu": 2, "h200": 16}, run_background=False,
                        engine_series={"h200": "slurm"})
    built = build_console(settings)
    runtime = built.runtime
    admin = bootstrap_admin(runtime)
    with TestClient(create_app(settings, built)) as client:
        created = client.post("/api/admin/users", json={"username": f"u{uuid.uuid4().hex[:8]}"},
                              headers={"Authorization": f"Bearer {admin}"})
        assert created.status_code == 200, created.text
        client.headers["Authorization"] = f"Bearer {created.json()['token']}"
        yield client


def _two_pools(api: TestClient, second_series: str) -> dict[str, Any]:
    spec = copy.deepcopy(spec_for(api, "nemo-rl/dpo", series="cpu"))
    spec["spec"]["resources"]["pools"].append({"name": "gen", "nodes": 1, "gpus_per_node": 1,
                                               "series": second_series})
    spec["spec"]["resources"]["roles"] = {"trainer": "all", "reference": "gen"}
    return spec


def test_pools_on_two_engines_are_refused_with_the_reason(api: TestClient) -> None:
    response = submit(api, _two_pools(api, "h200"), profile="cpu")
    assert response.status_code == 400, response.text
    problems = [p for p in response.json()["problems"] if p["code"] == "engines_span"]
    assert len(problems) == 1
    assert problems[0]["field"] == "spec.resources.pools"
    assert "cpu on local" in problems[0]["message"] and "h200 on slurm" in problems[0]["message"]
    assert problems[0]["hint"]


def test_pools_on_one_engine_are_not_refused_for_it(api: TestClient) -> None:
    response = submit(api, _two_pools(api, "cpu"), profile="cpu")
    codes = [p["code"] for p in response.json().get("problems", [])]
    assert "engines_span" not in codes, response.text


def test_the_configuration_maps_series_to_known_engines(tmp_path: Path) -> None:
    config = tmp_path / "console.yaml"
    config.write_text("executor: slurm\nexecutors:\n  series: {cpu: local, h100: ray}\n")
    settings = load_settings(config, state_dir=tmp_path / "state")
    assert settings.engine_of("h200") == "slurm" and settings.engine_of("cpu") == "local"
    assert settings.engines() == ("local", "ray", "slurm")
    config.write_text("executors:\n  series: {cpu: kubernetes}\n")
    with pytest.raises(SettingsError, match=r"executors\.series\.cpu: unknown engine 'kubernetes'"):
        load_settings(config, state_dir=tmp_path / "state")
    with pytest.raises(SettingsError, match="executor: unknown engine 'pbs'"):
        load_settings(None, state_dir=tmp_path / "state", executor="pbs")


class _Fake:
    """A stand-in engine that records what it is asked (the routing is the point, not the engine)."""

    def __init__(self, name: str, capacity: dict[str, int]) -> None:
        self.name, self._capacity, self.stopped = name, capacity, []

    def capacity(self) -> dict[str, int]:
        return self._capacity

    def poll_many(self, refs: list[str]) -> dict[str, ExecState]:
        return {ref: ExecState("running", detail=self.name) for ref in refs}

    def stop(self, ref: str, grace: float) -> None:
        self.stopped.append(ref)

    def reconcile(self, refs: list[str]) -> dict[str, ExecState]:
        return {ref: ExecState("exited", exit_code=0, detail=self.name) for ref in refs}


def test_engines_route_by_series_and_by_ref() -> None:
    local, slurm = _Fake("local", {"cpu": 4, "h200": 8}), _Fake("slurm", {"h200": 16, "cpu": 64})
    engines = Engines({"local": local, "slurm": slurm},  # type: ignore[dict-item]
                      lambda series: {"h200": "slurm"}.get(series, "local"))
    assert engines.capacity() == {"cpu": 4, "h200": 16}  # each series counted on its own engine
    assert engines.for_series(["h200"]) is slurm and engines.for_series(["cpu"]) is local
    with pytest.raises(JobRefused, match="different engines"):
        engines.for_series(["cpu", "h200"])
    assert ref_parts("slurm:812:/state/runs/a/b/r-1") == ("slurm", "812")
    assert ref_parts("local:4242:99:/state/runs/a/b/r-1") == ("local", "4242")
    assert ref_parts("4242:99:/state/runs/a/b/r-1") == ("local", "4242")
    polled = engines.poll_many(["slurm:812:/x", "local:17:1:/x"])
    assert polled["slurm:812:/x"].detail == "slurm" and polled["local:17:1:/x"].detail == "local"
    engines.stop("slurm:812:/x", 1)
    assert slurm.stopped == ["slurm:812:/x"] and local.stopped == []
    states = engines.reconcile(["slurm:1:/a", "local:5:1:/b", "ray:raysubmit_x:/c"])
    assert states["slurm:1:/a"].detail == "slurm" and states["local:5:1:/b"].detail == "local"
    assert states["ray:raysubmit_x:/c"].state == "lost"  # an engine this console no longer drives
