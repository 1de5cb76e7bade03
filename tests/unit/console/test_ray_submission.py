"""The Ray executor's pure parts: the Jobs API submission of a job (golden files) and `executors.ray` settings.

Regenerate the golden files after an intended change with
`STARFORGE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/console/test_ray_submission.py` and review the diff.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from starforge.engines import LaunchRequest, PoolShape
from starforge.engines.ray import (
    PLACEMENT_VARIABLE,
    RaySettings,
    ray_settings_from,
    render_submission,
)
from starforge.engines.ray.gang import rank_environment
from starforge.engines.ray.submission import GANG_MARGIN, Sandboxed, is_gang

GOLDEN = Path(__file__).parent / "golden" / "ray"
UPDATE = os.environ.get("STARFORGE_UPDATE_GOLDEN") == "1"
RUN = Path("/shared/state/runs/ada/exp/r-0001")


def _request(*pools: PoolShape, framework: str = "trl", argv: tuple[str, ...] = ()) -> LaunchRequest:
    return LaunchRequest(
        run_id="r-0001", run_dir=RUN,
        argv=argv or ("/shared/runtimes/rt-1/bin/python", "-c", "from starforge.runner.launch import main; main()",
                      "--workdir", f"{RUN}/work"),
        env={"PATH": "/usr/bin:/bin", "FORGE_RUN_ID": "r-0001"}, cwd=f"{RUN}/work",
        devices={p.series: p.nodes * p.per_node for p in pools}, pools=pools, framework=framework)


def _render(request: LaunchRequest, settings: RaySettings | None = None, **kwargs: object) -> dict[str, object]:
    return render_submission(request, settings or RaySettings(), submission_id="sf-r-0001-abc123",
                             log_file=f"{RUN}/logs/output.log", exit_file=f"{RUN}/logs/exit.json",
                             stop_grace=10.0, **kwargs).to_dict()  # type: ignore[arg-type]


CASES = {
    "h200_16": _request(PoolShape("h200", 2, 8), framework="nemo-rl"),
    "two_pools": _request(PoolShape("h200", 1, 8), PoolShape("h100", 2, 4), framework="verl"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_submission_matches_golden(case: str) -> None:
    text = json.dumps(_render(CASES[case]), indent=2, sort_keys=True) + "\n"
    golden = GOLDEN / f"{case}.json"
    if UPDATE:
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


def test_multi_node_jobs_get_one_pinned_bundle_per_node_and_a_driver_without_gpus() -> None:
    submission = _render(CASES["two_pools"])
    placement = json.loads(submission["runtime_env"]["env_vars"][PLACEMENT_VARIABLE])  # type: ignore[index]
    assert placement["strategy"] == "STRICT_SPREAD"
    assert placement["bundles"] == [{"GPU": 8.0, "accelerator_type:H200": 0.001},
                                    {"GPU": 4.0, "accelerator_type:H100": 0.001},
                                    {"GPU": 4.0, "accelerator_type:H100": 0.001}]
    assert [pool["bundles"] for pool in placement["pools"]] == [[0], [1, 2]]
    assert "entrypoint_num_gpus" not in submission and "entrypoint_resources" not in submission


def test_a_one_node_job_whose_driver_trains_holds_its_gpus_on_the_series_nodes() -> None:
    settings = RaySettings(series_resources={"h200": "pool-h200"})
    submission = _render(_request(PoolShape("h200", 1, 8), framework="trl"), settings)
    assert submission["entrypoint_num_gpus"] == 8.0
    assert submission["entrypoint_resources"] == {"pool-h200": 0.001}
    assert PLACEMENT_VARIABLE not in submission["runtime_env"]["env_vars"]  # type: ignore[index]
    # a Ray-based framework's driver holds nothing: its workers take the GPUs through the placement group
    ray_based = _render(_request(PoolShape("h200", 1, 8), framework="verl"), settings)
    assert "entrypoint_num_gpus" not in ray_based and "starforge_placement" in ray_based["metadata"]  # type: ignore[operator]


def test_a_cpu_job_reserves_cpus() -> None:
    submission = _render(_request(PoolShape("cpu", 1, 2), framework="tinyrl"))
    assert submission["entrypoint_num_cpus"] == 2.0 and "entrypoint_num_gpus" not in submission


def test_the_entrypoint_runs_argv_verbatim_with_its_output_in_the_run_log() -> None:
    argv = ("/opt/py thon/bin/python", "job.py", "it's $HOME; `x`")
    entrypoint = str(_render(_request(argv=argv))["entrypoint"])
    words = shlex.split(entrypoint)
    assert words[0] == "exec" and tuple(words[1:4]) == argv
    assert words[4:] == [">>", f"{RUN}/logs/output.log", "2>&1"]


def test_the_environment_carries_the_exit_file_and_the_stop_wait() -> None:
    env = _render(_request())["runtime_env"]["env_vars"]  # type: ignore[index]
    assert env["FORGE_EXIT_FILE"] == f"{RUN}/logs/exit.json" and env["FORGE_RUN_ID"] == "r-0001"
    assert env["RAY_JOB_STOP_WAIT_TIME_S"] == "10"


def test_runtime_requirements_travel_only_when_nodes_do_not_share_the_runtime() -> None:
    shared = _render(_request(), requirements=("trl==0.20",))
    assert "pip" not in shared["runtime_env"]  # type: ignore[operator]
    apart = _render(_request(), RaySettings(shared_runtime=False), requirements=("trl==0.20",))
    assert apart["runtime_env"]["pip"] == ["trl==0.20"]  # type: ignore[index]
    assert shlex.split(str(apart["entrypoint"]))[1] == "python"


def test_settings_parse_and_name_the_bad_key() -> None:
    settings = ray_settings_from({"series_resources": {"h200": "accelerator_type:H200"}, "shared_runtime": False,
                                  "address": "http://head:8265/", "sandbox": "off"})
    assert settings.resource_for("h200") == "accelerator_type:H200" and settings.resource_for("a100") == \
        "accelerator_type:A100" and settings.resource_for("cpu") == ""
    assert settings.address == "http://head:8265" and not settings.shared_runtime
    with pytest.raises(ValueError, match="unknown keys bogus"):
        ray_settings_from({"bogus": 1})
    with pytest.raises(ValueError, match=r"series_resources\.h200"):
        ray_settings_from({"series_resources": {"h200": "has space"}})
    assert settings.sandbox is False and ray_settings_from({}).sandbox is True
    assert ray_settings_from({"network": "none", "slots_per_node": {"cpu": 1}}).slots_per_node == {"cpu": 1}
    with pytest.raises(ValueError, match=r"shared_runtime: false .* executors\.ray\.sandbox: off"):
        ray_settings_from({"shared_runtime": False})  # a runtime Ray builds on the node is not in the sandbox
    with pytest.raises(ValueError, match=r"executors\.ray\.network"):
        ray_settings_from({"network": "internet"})
    with pytest.raises(ValueError, match=r"executors\.ray\.slots_per_node"):
        ray_settings_from({"slots_per_node": {"cpu": 0}})


def test_a_sandboxed_job_starts_through_the_node_helper_with_sigterm_left_to_the_job() -> None:
    command = ("/venv/bin/python", "-I", "-m", "starforge.engines.jobnet_node", "--network", "egress", "--", "bwrap",
               "--args", "9", "--", "env", "--default-signal=TERM", "python", "job.py")
    submission = _render(_request(PoolShape("cpu", 1, 1), framework="tinyrl"),
                         sandboxed=Sandboxed(command, f"{RUN}/sandbox.args"), token_file=f"{RUN}/run-token")
    entrypoint = str(submission["entrypoint"])
    assert entrypoint.startswith('trap "" TERM; STARFORGE_TOKEN="$(cat -- /shared/state/runs/ada/exp/r-0001/run-token)" exec ')
    words = shlex.split(entrypoint.split("exec ", 1)[1])
    assert tuple(words[:len(command)]) == command
    assert words[len(command):] == [f"9<{RUN}/sandbox.args", ">>", f"{RUN}/logs/output.log", "2>&1"]
    assert "working_dir" not in submission["runtime_env"]  # the job works in its own folder, not an uploaded copy
    assert submission["entrypoint_num_cpus"] == 1.0


def test_a_multi_node_job_is_started_by_the_gang_launcher_with_time_to_stop_its_ranks() -> None:
    request = _request(PoolShape("cpu", 2, 1), framework="custom")
    assert is_gang(request, RaySettings()) and not is_gang(CASES["h200_16"], RaySettings())  # nemo-rl: its own Ray
    submission = _render(request, gang_file=f"{RUN}/ray-gang.json", python="/venv/bin/python",
                         token_file=f"{RUN}/run-token")
    words = shlex.split(str(submission["entrypoint"]))
    assert words == ["exec", "/venv/bin/python", "-I", "-m", "starforge.engines.ray.gang", f"{RUN}/ray-gang.json",
                     ">>", f"{RUN}/logs/output.log", "2>&1"]  # no token: each rank reads it on its node
    env = submission["runtime_env"]["env_vars"]  # type: ignore[index]
    assert env["RAY_JOB_STOP_WAIT_TIME_S"] == str(10 + GANG_MARGIN)
    assert json.loads(env[PLACEMENT_VARIABLE])["bundles"] == [{"CPU": 1.0}, {"CPU": 1.0}]
    assert "entrypoint_num_cpus" not in submission


def test_each_rank_gets_its_place_in_the_gang_and_its_own_exit_record() -> None:
    base = {"FORGE_EXIT_FILE": "/forge/runs/a/e/r/logs/exit.json", "PATH": "/usr/bin"}
    first = rank_environment(base, rank=0, ranks=2, per_node=1, master_addr="100.64.0.1", master_port=29500,
                             fabric=True)
    second = rank_environment(base, rank=1, ranks=2, per_node=1, master_addr="100.64.0.1", master_port=29500,
                              fabric=True)
    assert (first["NODE_RANK"], second["NODE_RANK"], first["NNODES"], first["MASTER_PORT"]) == ("0", "1", "2", "29500")
    assert first["GLOO_SOCKET_IFNAME"] == second["NCCL_SOCKET_IFNAME"] == "sf-fabric"
    assert first["FORGE_EXIT_FILE"] == base["FORGE_EXIT_FILE"]
    assert second["FORGE_EXIT_FILE"] == "/forge/runs/a/e/r/logs/exit-rank1.json"
    plain = rank_environment(base, rank=1, ranks=2, per_node=1, master_addr="10.0.0.5", master_port=4000,
                             fabric=False)
    assert "GLOO_SOCKET_IFNAME" not in plain and plain["MASTER_ADDR"] == "10.0.0.5"


def test_importing_the_ray_package_and_settings_does_not_import_ray() -> None:
    import subprocess
    import sys

    code = "import sys, starforge.console.settings, starforge.engines.ray; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
