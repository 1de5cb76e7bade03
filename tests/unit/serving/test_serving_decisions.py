"""The decisions of inference services, in process: TTL arithmetic, the access rule, the server plans (vLLM on a GPU
series, Transformers on a CPU one), the `serving:` settings and the internal recipes' place in the catalog."""

from __future__ import annotations

import pytest

from starforge.console.scheduling_config import ServingSettings, read_serving
from starforge.console.services.serving import ttl
from starforge.console.services.serving.access import Credential, decide
from starforge.recipes import load_catalog, load_internal_recipes
from starforge.serving.plan import plan_from_env, render_plan, server_of

S = ServingSettings(default_ttl_hours=1, max_ttl_hours=4, idle_ttl_hours=0.5)
H = 3600.0


def test_first_expiry_is_the_default_or_the_ask_never_past_the_cap() -> None:
    assert ttl.first_expiry(1000.0, None, S) == 1000.0 + H
    assert ttl.first_expiry(1000.0, 2.5, S) == 1000.0 + 2.5 * H
    assert ttl.first_expiry(1000.0, 9, S) == 1000.0 + 4 * H


def test_a_request_moves_the_expiry_to_now_plus_idle_but_never_back_and_never_past_the_cap() -> None:
    created = 0.0
    assert ttl.touched(10.0, created_at=created, expires_at=100.0, idle_ttl_s=1800, settings=S) == 1810.0
    assert ttl.touched(10.0, created_at=created, expires_at=H, idle_ttl_s=1800, settings=S) == H  # never earlier
    assert ttl.touched(4 * H - 5, created_at=created, expires_at=4 * H - 10, idle_ttl_s=1800, settings=S) == 4 * H


def test_extend_adds_hours_from_the_later_of_now_and_the_expiry_capped() -> None:
    assert ttl.extended(50.0, created_at=0.0, expires_at=H, hours=1, settings=S) == 2 * H
    assert ttl.extended(2 * H, created_at=0.0, expires_at=H, hours=1, settings=S) == 3 * H  # it had expired
    assert ttl.extended(50.0, created_at=0.0, expires_at=H, hours=10, settings=S) == 4 * H


def test_a_service_job_runs_at_most_the_cap() -> None:
    assert ttl.service_wall_seconds(None, S) == 4 * H
    assert ttl.service_wall_seconds(10 * H, S) == 4 * H and ttl.service_wall_seconds(H, S) == H


@pytest.mark.parametrize(("asked", "code"), [(5, "ttl_over_cap"), (0, "invalid_request"), (-1, "invalid_request"),
                                            ("2", "invalid_request"), (True, "invalid_request"),
                                            (float("inf"), "invalid_request")])
def test_a_ttl_outside_zero_to_the_cap_is_refused_at_its_field(asked: object, code: str) -> None:
    problems = ttl.check_ttl(asked, S)
    assert [(p.field, p.code) for p in problems] == [("ttl_hours", code)]
    if code == "ttl_over_cap":
        assert "cap of 4 hours" in problems[0].message and problems[0].hint


def test_a_ttl_within_the_cap_or_none_passes() -> None:
    assert ttl.check_ttl(None, S) == [] and ttl.check_ttl(4, S) == [] and ttl.check_ttl(0.01, S) == []


OWNER = 7


@pytest.mark.parametrize(("cred", "method", "status"), [
    (Credential(), "GET", 401),
    (Credential("token", OWNER), "POST", 200),
    (Credential("token", 8), "GET", 404),
    (Credential("key", OWNER, "r-svc"), "POST", 200),
    (Credential("key", OWNER, "r-other"), "POST", 404),
    (Credential("key", 8, "r-svc"), "POST", 404),
    (Credential("session", OWNER, csrf_ok=False), "GET", 200),
    (Credential("session", OWNER, csrf_ok=False), "HEAD", 200),
    (Credential("session", OWNER, csrf_ok=False), "POST", 403),
    (Credential("session", OWNER, csrf_ok=True), "POST", 200),
    (Credential("session", 8, csrf_ok=True), "POST", 404),
])
def test_the_access_rule(cred: Credential, method: str, status: int) -> None:
    assert decide(cred, owner_id=OWNER, service_id="r-svc", method=method) == status


def test_transformers_plan_on_cpu_serves_the_folder_offline_on_loopback() -> None:
    plan = render_plan("transformers", model="/m/tiny", port=8123, gpus=0, bin_dir="/venv/bin", local=True)
    assert plan.argv[:3] == ("/venv/bin/transformers", "serve", "/m/tiny")
    assert plan.argv[plan.argv.index("--host") + 1] == "127.0.0.1"
    assert plan.argv[plan.argv.index("--port") + 1] == "8123"
    assert plan.argv[plan.argv.index("--device") + 1] == "cpu"
    assert plan.env == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"} and plan.model_id == "/m/tiny"


def test_vllm_plan_on_gpus_shards_over_them_and_names_the_model() -> None:
    plan = render_plan("vllm", model="org/name", port=9000, gpus=4, bin_dir="/v/bin", local=False)
    assert plan.argv[:3] == ("/v/bin/vllm", "serve", "org/name")
    assert plan.argv[plan.argv.index("--tensor-parallel-size") + 1] == "4"
    assert plan.argv[plan.argv.index("--served-model-name") + 1] == "org/name"
    assert plan.argv[plan.argv.index("--host") + 1] == "127.0.0.1" and plan.env == {}


def test_the_plan_from_the_job_environment(tmp_path: object) -> None:
    env = {"FORGE_RECIPE": "serving/vllm", "FORGE_MODEL": "org/name", "FORGE_CLUSTER_GPUS_PER_NODE": "2"}
    plan = plan_from_env(env, port=1, bin_dir="/b")
    assert plan.server == "vllm" and "2" in plan.argv
    with pytest.raises(ValueError, match="names no model"):
        plan_from_env({"FORGE_RECIPE": "serving/transformers"}, port=1, bin_dir="/b")
    with pytest.raises(ValueError, match="not there"):
        plan_from_env({"FORGE_RECIPE": "serving/transformers", "FORGE_INIT_FROM": "/nowhere/x"}, port=1, bin_dir="/b")
    with pytest.raises(ValueError, match="not a serving recipe"):
        server_of("trl/sft")


def test_serving_settings_are_read_and_checked() -> None:
    assert read_serving(None) == ServingSettings()
    assert read_serving({"idle_ttl_hours": 0.25}).idle_ttl_seconds == 900
    for bad, says in (({"max_ttl_hours": 0}, "greater than 0"), ({"ttl": 1}, "unknown key"),
                      ({"default_ttl_hours": 5, "max_ttl_hours": 2}, "at most max_ttl_hours")):
        with pytest.raises(ValueError, match=says):
            read_serving(bad)


def test_internal_recipes_are_found_but_never_listed_or_published() -> None:
    internal = load_internal_recipes()
    assert sorted(r.id for r in internal) == ["serving/transformers", "serving/vllm"]
    catalog = load_catalog(overlays=False).with_internal(internal)
    assert catalog.get("serving/vllm") is not None
    assert "serving/vllm" not in catalog.ids and "serving/vllm" not in catalog
    listed = {entry.get("id") or entry.get("name") for entry in catalog.payload().get("recipes", [])}
    assert not any(str(x).startswith("serving") for x in listed)
    assert catalog.lookup("serving/transformers")[0] is None  # a client's spec can never name it
    assert catalog.with_disabled(["trl/sft"]).get("serving/transformers") is not None
