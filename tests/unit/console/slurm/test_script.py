"""Golden Slurm batch scripts: one per job shape (single node, multi-node, Ray-on-Slurm, hetjob, containers).

Each rendered script must equal `golden/<name>.sh` and pass `bash -n`. After a deliberate change, regenerate with
`STARFORGE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/console/slurm/test_script.py` and review the diff.
The single-node and multi-node scripts are also run by bash with stand-ins for `srun` and `scontrol` on the PATH,
so what the job receives (argv, environment, rendezvous variables) is observed, not assumed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from starforge.engines.base import JobRefused
from starforge.engines.slurm import (
    SlurmJob,
    SlurmPool,
    SlurmSettings,
    render_batch,
    slurm_settings_from,
)

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("STARFORGE_UPDATE_GOLDEN") == "1"
BASH = shutil.which("bash")
RUN = "/shared/state/runs/alice/exp/r-0123456789"
TOKEN = "sf-run-token-3c9f"  # noqa: S105 - a made-up run token: it must never be written into the script
SETTINGS = slurm_settings_from({
    "series": {
        "h200": {"partition": "gpu-h200", "constraint": "h200", "account": "lab", "qos": "normal",
                 "gres": "gpu", "gpus_per_node": 8},
        "h100": {"partition": "gpu-h100", "account": "lab", "gres": "gpu:h100", "gpus_per_node": 8},
        "cpu": {"partition": "cpu"},
    },
    "time_limit_hours": 1,
    "sbatch_options": ["--exclusive", "--mail-type=FAIL"],
    "runtime_root": "/shared/starforge/runtimes",
})
PYTHON = "/shared/starforge/runtimes/rt-1/bin/python"
JOB_RUN = "/forge/runs/alice/exp/r-0123456789"  # the run as the sandboxed job sees it
SETPRIV = ("setpriv", "--reuid=61184", "--regid=61184", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
           "--no-new-privs", "--")
HELPER = ("/shared/starforge/runtimes/rt-1/bin/python", "-I", "-m", "starforge.engines.jobnet_node", "--network",
          "egress", "--console", "http://console.lab:8000/api/ingest")


def job(*pools: tuple[str, int, int], uses_ray: bool = False, **changes: Any) -> SlurmJob:
    base = SlurmJob(
        run_id="r-0123456789", name="sf-alice-exp-r-0123456789", run_dir=RUN, logs=f"{RUN}/logs",
        argv=(PYTHON, "-m", "starforge.runner", "--plan", f"{RUN}/work/.starforge/plan.json"),
        env={"FORGE_RUN_ID": "r-0123456789", "STARFORGE_TOKEN": TOKEN, "HF_HOME": "/shared/hub/alice"},
        cwd=f"{RUN}/work", pools=tuple(SlurmPool(*p) for p in pools), time_limit_seconds=7200.0,
        image="nvcr.io/nvidia/nemo:25.04", uses_ray=uses_ray, python=PYTHON,
    )
    return dataclasses.replace(base, **changes)


CASES = {
    "cpu1_single": (job(("cpu", 1, 1), time_limit_seconds=None), SETTINGS),
    "h200x16_torchrun": (job(("h200", 2, 8)), SETTINGS),
    "h200x16_ray": (job(("h200", 2, 8), uses_ray=True), SETTINGS),
    "hetjob_actor_rollout_ray": (job(("h200", 1, 8), ("h100", 1, 8), uses_ray=True), SETTINGS),
    "hetjob_actor_rollout_plain": (job(("h200", 1, 8), ("h100", 1, 8)), SETTINGS),
    "h200x16_ray_pyxis": (job(("h200", 2, 8), uses_ray=True), dataclasses.replace(SETTINGS, container="pyxis")),
    "h200x16_ray_apptainer": (job(("h200", 2, 8), uses_ray=True),
                              dataclasses.replace(SETTINGS, container="apptainer")),
    "h200x16_torchrun_sandbox": (job(("h200", 2, 8), sandbox="/usr/bin/bwrap", cwd=f"{JOB_RUN}/work",
                                     argv=(*SETPRIV, PYTHON, "-m", "starforge.runner", "--workdir",
                                           f"{JOB_RUN}/work")), SETTINGS),
    "h200x16_torchrun_fabric": (job(("h200", 2, 8), sandbox="/usr/bin/bwrap", cwd=f"{JOB_RUN}/work",
                                    network_helper=HELPER, fabric=f"{RUN}/fabric",
                                    argv=(*SETPRIV, PYTHON, "-m", "starforge.runner", "--workdir",
                                          f"{JOB_RUN}/work")), SETTINGS),
}


def bash_syntax_ok(path: Path) -> None:
    assert BASH is not None, "bash is needed to check the rendered scripts"
    result = subprocess.run([BASH, "-n", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_batch_script(name: str) -> None:
    rendered = render_batch(*CASES[name])
    path = GOLDEN / f"{name}.sh"
    if UPDATE:
        path.write_text(rendered, encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}: run with STARFORGE_UPDATE_GOLDEN=1"
    assert rendered == path.read_text(encoding="utf-8")
    bash_syntax_ok(path)
    assert TOKEN not in rendered, "the run token was written into the script"
    assert f'export STARFORGE_TOKEN="$(cat -- {RUN}/run-token)"' in rendered.splitlines()
    assert "--parsable" not in rendered


def test_shapes_in_the_golden_scripts() -> None:
    single = render_batch(*CASES["cpu1_single"]).splitlines()
    assert "#SBATCH --cpus-per-task=1" in single and not any("--gres" in line for line in single)
    assert "#SBATCH --time=0-01:00:00" in single  # the settings' default when the job has no limit
    multi = render_batch(*CASES["h200x16_torchrun"]).splitlines()
    for line in ("#SBATCH --nodes=2", "#SBATCH --gres=gpu:8", "#SBATCH --ntasks-per-node=1", "#SBATCH --time=0-02:00:00",
                 "#SBATCH --partition=gpu-h200", "#SBATCH --constraint=h200", "#SBATCH --account=lab",
                 "#SBATCH --qos=normal", f"#SBATCH --output={RUN}/logs/output.log", "#SBATCH --exclusive"):
        assert line in multi
    het = render_batch(*CASES["hetjob_actor_rollout_ray"]).splitlines()
    assert het.count("#SBATCH hetjob") == 1 and "#SBATCH --gres=gpu:h100:8" in het
    assert het.index("#SBATCH --partition=gpu-h200") < het.index("#SBATCH hetjob") < het.index(
        "#SBATCH --partition=gpu-h100")
    assert sum("--het-group=1" in line for line in het) == 1  # the rollout node's Ray worker


def stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/bash\n" + body, encoding="utf-8")
    path.chmod(0o755)


def run_script(tmp_path: Path, script: str, nodes: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a batch script with stand-ins: `scontrol show hostnames` prints `nodes` (for every node list), `hostname`
    prints two addresses, and `srun` runs its command once per node (after its options), with SLURM_NODEID and
    SLURM_PROCID set."""
    assert BASH is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub(bin_dir, "scontrol", "printf '%s\\n' " + " ".join(nodes) + "\n")
    stub(bin_dir, "hostname", "echo 10.0.0.1 10.0.0.9\n")
    stub(bin_dir, "srun", """n=1
while [[ $# -gt 0 && $1 == -* ]]; do
  case $1 in --nodes=*) n=${1#--nodes=};; -w) shift;; esac
  shift
done
for ((i = 0; i < n; i++)); do SLURM_NODEID=$i SLURM_PROCID=$i "$@"; done
""")
    path = tmp_path / "job.sh"
    path.write_text(script, encoding="utf-8")
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_NODELIST": "node[1-2]",
           "SLURM_JOB_NODELIST_HET_GROUP_0": "node1", "SLURM_JOB_NODELIST_HET_GROUP_1": "node2"}
    return subprocess.run([BASH, str(path)], capture_output=True, text=True, env=env, check=False, timeout=60)


PRINT_ENV = (sys.executable, "-c",
             "import json, os, sys; print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(), "
             "'env': {k: v for k, v in os.environ.items() if k.startswith(('H_', 'MASTER', 'NODE_', 'NNODES'))}}))")


def test_hostile_environment_values_reach_the_job_unchanged(tmp_path: Path) -> None:
    hostile = {
        "H_QUOTES": "it's \"quoted\" `here`",
        "H_SUBST": "$(touch {marker}) ${{HOME}} $HOME",
        "H_NEWLINES": "line one\n#SBATCH --partition=evil\nexport H_QUOTES=overwritten",
        "H_EMPTY": "",
        "H_BACKSLASH": "a\\b\\\\c; rm -rf /",
    }
    marker = tmp_path / "pwned"
    env = {k: v.format(marker=marker) for k, v in hostile.items()}
    work = tmp_path / "work"
    work.mkdir()
    argv = (*PRINT_ENV, "arg with space", "$(touch " + str(marker) + ")", "'")
    script = render_batch(job(("cpu", 1, 1), env=env, argv=argv, cwd=str(work)), SETTINGS)
    assert "--partition=evil" not in [line for line in script.splitlines() if line.startswith("#SBATCH")]
    result = run_script(tmp_path, script, ["node1"])
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["env"] == env
    assert seen["argv"] == list(argv[3:])
    assert seen["cwd"] == str(work)
    assert not marker.exists()


def test_multi_node_script_gives_each_node_its_rendezvous(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = render_batch(job(("h200", 2, 8), argv=PRINT_ENV, cwd=str(work)), SETTINGS)
    result = run_script(tmp_path, script, ["node1", "node2"])
    assert result.returncode == 0, result.stderr
    nodes = [json.loads(line)["env"] for line in result.stdout.splitlines()]
    assert nodes == [
        {"MASTER_ADDR": "node1", "MASTER_PORT": "29500", "NNODES": "2", "NODE_RANK": str(rank)} for rank in (0, 1)
    ]


def test_sandboxed_nodes_start_bubblewrap_with_the_options_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "sandbox.args").write_bytes(b"--chdir\0/forge/runs/r/work\0")
    fake = tmp_path / "fake-bwrap"  # prints what it was given: its argv and the options read from fd 9
    stub(tmp_path, "fake-bwrap", 'printf "%s|" "$@"; tr "\\0" , <&9; trap -p TERM\n')
    script = render_batch(job(("h200", 2, 8), argv=("python", "job.py"), run_dir=str(run), logs=str(run / "logs"),
                              sandbox=str(fake)), SETTINGS)
    result = run_script(tmp_path, script, ["node1", "node2"])
    assert result.returncode == 0, result.stderr
    line = "--args|9|--|env|--default-signal=TERM|python|job.py|--chdir,/forge/runs/r/work,"
    assert result.stdout.splitlines() == [f"{line}trap -- '' SIGTERM"] * 2


def test_sandboxed_nodes_join_the_job_fabric_each_with_its_rank(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "sandbox.args").write_bytes(b"--chdir\0/forge/runs/r/work\0")
    # the node's helper prints its argv and the rendezvous it passes on, then what bubblewrap reads from fd 9
    stub(tmp_path, "fake-helper", 'printf "%s|" "$@"; printf "%s|" "$MASTER_ADDR" "$MASTER_PORT" "$NNODES" '
                                  '"$GLOO_SOCKET_IFNAME" "$NCCL_SOCKET_IFNAME" "$FORGE_EXIT_FILE"; tr "\\0" , <&9; echo\n')
    script = render_batch(job(("cpu", 2, 1), argv=("python", "job.py"), run_dir=str(run), logs=str(run / "logs"),
                              env={"FORGE_EXIT_FILE": "/forge/runs/r/logs/exit.json"},
                              sandbox="/usr/bin/bwrap", network_helper=(str(tmp_path / "fake-helper"), "--network",
                                                                        "none"), fabric=str(run / "fabric")),
                          SETTINGS)
    result = run_script(tmp_path, script, ["node1", "node2"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"--network|none|--fabric|{run}/fabric|--ranks|2|--rank|{rank}|--|/usr/bin/bwrap|--args|9|--|env|"
        f"--default-signal=TERM|python|job.py|100.64.213.1|29500|2|sf-fabric|sf-fabric|{exit_file}|"
        "--chdir,/forge/runs/r/work,"
        for rank, exit_file in ((0, "/forge/runs/r/logs/exit.json"), (1, "/forge/runs/r/logs/exit-rank1.json"))]


def test_a_failing_command_fails_the_script(tmp_path: Path) -> None:
    script = render_batch(job(("cpu", 1, 1), argv=(sys.executable, "-c", "raise SystemExit(7)"),
                              cwd=str(tmp_path)), SETTINGS)
    assert run_script(tmp_path, script, ["node1"]).returncode == 7


@pytest.mark.parametrize(("changes", "message"), [
    ({"env": {"BAD-NAME": "x"}}, "not a valid shell name"),
    ({"env": {"A=B": "x"}}, "not a valid shell name"),
    ({"logs": "/state dir/logs"}, "cannot be named on an #SBATCH line"),
    ({"logs": "/state/%j/logs"}, "cannot be named on an #SBATCH line"),
    ({"pools": (SlurmPool("h200", 1, 16),)}, "a h200 node has 8"),
    ({"pools": ()}, "no pool"),
    ({"argv": ()}, "no command"),
    ({"sandbox": "bwrap", "uses_ray": True}, "cannot wrap a Ray world"),
])
def test_jobs_slurm_cannot_express_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(JobRefused, match=message):
        render_batch(job(("h200", 1, 8), **changes), SETTINGS)


def test_container_modes_need_an_image() -> None:
    with pytest.raises(JobRefused, match="container mode pyxis needs the job's image"):
        render_batch(job(("h200", 1, 8), image=""), dataclasses.replace(SETTINGS, container="pyxis"))


def test_time_limit_and_job_name_rendering() -> None:
    script = render_batch(job(("cpu", 1, 1), time_limit_seconds=90061.5, name="a b/c\n#x"), SlurmSettings())
    lines = script.splitlines()
    assert "#SBATCH --time=1-01:01:02" in lines  # rounded up to the second
    assert "#SBATCH --job-name=a-b-c--x" in lines
    unlimited = render_batch(job(("cpu", 1, 1), time_limit_seconds=None), SlurmSettings())
    assert not any(line.startswith("#SBATCH --time") for line in unlimited.splitlines())


def test_ray_bootstrap_starts_head_then_workers_then_the_driver(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    calls = tmp_path / "calls.log"
    stub(runtime, "ray", f'echo "ray $* on $SLURM_NODEID" >> {calls}\n')
    # the wait for nodes ($4 of `python -c CHECK ADDRESS COUNT`): succeeds once that many `ray start` ran
    stub(runtime, "python", f"""for i in $(seq 200); do
  if [[ $(grep -c '^ray start' {calls} 2>/dev/null) -ge $4 ]]; then echo "check $4" >> {calls}; exit 0; fi
  sleep 0.05
done
exit 1
""")
    work = tmp_path / "work"
    work.mkdir()
    driver = (sys.executable, "-c", "import os; print('driver at', os.environ['RAY_ADDRESS'])")
    script = render_batch(job(("h200", 1, 8), ("h100", 2, 8), uses_ray=True, argv=driver, cwd=str(work),
                              python=str(runtime / "python")), SETTINGS)
    result = run_script(tmp_path, script, ["node1", "node2"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "driver at 10.0.0.1:6379"
    lines = calls.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "ray start --head --node-ip-address=10.0.0.1 --port=6379 --block on 0"
    assert lines[1] == "check 1"
    # the stand-in scontrol lists two nodes per group: one more in the head's group, two in the rollout group
    # the workers start in the background: the wait for three nodes may pass before the last stand-in writes its line
    assert sorted(lines[2:6]) == sorted(["ray start --address=10.0.0.1:6379 --block on 0"] * 3 + [f"check {1 + 2}"])
    assert lines[2] != f"check {1 + 2}"
