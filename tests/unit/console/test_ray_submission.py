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
                                  "address": "http://head:8265/"})
    assert settings.resource_for("h200") == "accelerator_type:H200" and settings.resource_for("a100") == \
        "accelerator_type:A100" and settings.resource_for("cpu") == ""
    assert settings.address == "http://head:8265" and not settings.shared_runtime
    with pytest.raises(ValueError, match="unknown keys bogus"):
        ray_settings_from({"bogus": 1})
    with pytest.raises(ValueError, match=r"series_resources\.h200"):
        ray_settings_from({"series_resources": {"h200": "has space"}})


def test_importing_the_ray_package_and_settings_does_not_import_ray() -> None:
    import subprocess
    import sys

    code = "import sys, starforge.console.settings, starforge.engines.ray; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
