"""A job's platform metrics mirrored to a real MLflow tracking server started on loopback (`mlflow server`, SQLite
backend in a temporary folder): a custom job reporting to that server's URL fails its first attempt and succeeds on
its automatic restart; the MLflow run (one, continued across both attempts) has every step of both, the job's tags,
and ends FINISHED. A stopped job's run ends KILLED; a URL on no allowed host is refused (shown to the owner, never
sent); points sent while the server is unreachable (behind a closed relay) arrive once it is back. The console is told loopback is allowed."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import service_unavailable
from tests.integration.conftest import DEFAULT_CONFIG, ConsoleProcess, free_port, make_console, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit

HOW = "make install (the dev extra installs mlflow, whose `mlflow server` these tests start)"
AWAIT_GO = "while [ ! -e go ]; do sleep 0.1; done\n"
REPORT = (f"{sys.executable} -c 'import os; from starforge.runner import report; a = int(os.environ[\"FORGE_ATTEMPT\"]); "
          "[report.log({{\"train/loss\": 1.0 / (s + 1), \"train/reward\": float(s)}}, step=s) for s in {steps}]; "
          "report.finish()'\n")


class MlflowServer:
    """A `mlflow server` on 127.0.0.1 with its store in a temporary folder; `stop`/`start` keep its store."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        exe = Path(sys.executable).with_name("mlflow")
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with (self.root / "server.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [str(exe), "server", "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1",
                 "--backend-store-uri", f"sqlite:///{self.root / 'mlflow.db'}",
                 "--default-artifact-root", str(self.root / "artifacts")],
                stdout=log, stderr=log, env=env, start_new_session=True)
        deadline = time.monotonic() + 180  # its first start migrates the store: about 30 s on the 2-core machine
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.root / "server.log").read_text()[-3000:]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise AssertionError("mlflow server did not answer /health:\n" + (self.root / "server.log").read_text()[-3000:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


class Gate:
    """A TCP relay on 127.0.0.1 in front of the MLflow server that the test closes (refusing connections and cutting
    the open ones: a server gone down) and opens again, without restarting the server."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []

    def open(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    if shutil.which("mlflow", path=str(Path(sys.executable).parent)) is None:
        service_unavailable("MLflow", "mlflow is not installed: the MLflow mirror cannot be tested", HOW)
    server = MlflowServer(tmp_path_factory.mktemp("mlflow"))
    server.start()
    yield server
    server.stop()


MIRROR_CONFIG = {**DEFAULT_CONFIG,
                 "mlflow": {"allow_hosts": ["127.0.0.1"], "allow_loopback": True, "interval_seconds": 0.2}}


@pytest.fixture(scope="module")
def mirror_console(tmp_path_factory: pytest.TempPathFactory, mlflow_server: MlflowServer) -> Iterator[ConsoleProcess]:
    """A console that mirrors jobs naming an allowed server, and every other job to `mlflow.mirror_all`."""
    proc = make_console(tmp_path_factory, "sqlite",
                        config={**MIRROR_CONFIG, "mlflow": {**MIRROR_CONFIG["mlflow"], "mirror_all": mlflow_server.url}})
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture
def pg_mirror_console(tmp_path_factory: pytest.TempPathFactory, mlflow_server: MlflowServer) -> Iterator[ConsoleProcess]:
    proc = make_console(tmp_path_factory, "postgres", config=MIRROR_CONFIG)
    proc.start()
    yield proc
    proc.stop()


def _custom_job(api: httpx.Client, name: str, url: str, script: str, **meta: Any) -> str:
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}", series="cpu", gpus=1)
    spec["spec"]["framework"]["image"] = "nvcr.io/team/trainer:1.0"
    spec["spec"]["framework"]["observability_url"] = url
    return admitted(submit(api, spec, data=bundle({f"experiments/{name}/train.sh": script}), extra_meta=meta))


def _mirrored(server: MlflowServer, seen: dict[str, Any], count: int) -> bool:
    from mlflow import MlflowClient

    run_id = seen["mirror"]["mlflow_run_id"]
    return len(MlflowClient(tracking_uri=server.url).get_metric_history(run_id, "train/loss")) >= count


def _until(api: httpx.Client, job: str, done: Any, what: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    seen: dict[str, Any] = {}
    while time.monotonic() < deadline:
        seen = {"job": api.get("/api/job", params={"id": job}).json(),
                "mirror": api.get("/api/job/mirror", params={"id": job}).json()["mirror"]}
        if done(seen):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"{what}: {seen}")


def test_two_attempts_land_in_one_mlflow_run_that_ends_finished(mirror_console: ConsoleProcess,
                                                                mlflow_server: MlflowServer) -> None:
    _two_attempts(mirror_console, mlflow_server)


def test_two_attempts_on_postgresql(pg_mirror_console: ConsoleProcess, mlflow_server: MlflowServer) -> None:
    _two_attempts(pg_mirror_console, mlflow_server)


def _two_attempts(mirror_console: ConsoleProcess, mlflow_server: MlflowServer) -> None:
    from mlflow import MlflowClient

    user = unique("mlf")
    api = mirror_console.client(mirror_console.token_for(user))
    first, second = REPORT.format(steps="range(0, 3)"), REPORT.format(steps="range(3, 6)")
    # the first attempt fails once its points are in MLflow (the test then creates `go`); the second starts over
    script = f'if [ "$FORGE_ATTEMPT" = 1 ]; then {first.strip()}; {AWAIT_GO.strip()}; exit 3; fi\n{second}'
    job = _custom_job(api, "mirrored", f"{mlflow_server.url}/#/experiments", script, max_restarts=1)
    _until(api, job, lambda s: bool(s["mirror"] and s["mirror"]["mlflow_run_id"] and _mirrored(mlflow_server, s, 3)),
           "the first attempt's points did not reach MLflow")
    (mirror_console.state_dir / "runs" / user / "mirrored" / job / "work" / "go").touch()
    seen = _until(api, job, lambda s: s["mirror"] and s["mirror"]["state"] == "done", "the mirror did not finish")
    assert seen["job"]["status"] == "succeeded"
    mirror = seen["mirror"]
    assert (mirror["tracking_uri"], mirror["run_status"], mirror["pending_points"], mirror["error"]) == \
        (mlflow_server.url, "FINISHED", 0, None)
    client = MlflowClient(tracking_uri=mlflow_server.url)
    run = client.get_run(mirror["mlflow_run_id"])
    assert run.info.status == "FINISHED" and run.info.run_name == seen["job"]["name"]
    assert run.data.tags["starforge.job_ref"] == job and run.data.tags["starforge.owner"] == user
    assert run.data.tags["starforge.recipe"] == "custom/custom"
    assert run.data.tags["mlflow.source.git.commit"] == "3f2a9c1"
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.name == "it-lab/mirrored"
    history = client.get_metric_history(run.info.run_id, "train/loss")
    # both attempts in one run: MLflow keeps the first attempt's points, which the console replaced when the second
    # started over (`jobs.attempts.drop_replayed`)
    assert [m.step for m in sorted(history, key=lambda m: m.step)] == [0, 1, 2, 3, 4, 5]
    assert sorted(m.value for m in client.get_metric_history(run.info.run_id, "train/reward")) == [0, 1, 2, 3, 4, 5]
    runs = client.search_runs([run.info.experiment_id], filter_string=f"tags.`starforge.job_ref` = '{job}'")
    assert len(runs) == 1
    api.close()


def test_a_stopped_job_ends_killed_and_an_unlisted_host_is_refused(mirror_console: ConsoleProcess,
                                                                    mlflow_server: MlflowServer) -> None:
    from mlflow import MlflowClient

    api = mirror_console.client(mirror_console.token_for(unique("mlf")))
    sleeper = _custom_job(api, "sleeper", mlflow_server.url, REPORT.format(steps="range(2)") + "sleep 600\n")
    _until(api, sleeper, lambda s: s["mirror"] and s["mirror"]["pending_points"] == 0 and s["mirror"]["mlflow_run_id"]
           and s["job"]["status"] == "running", "the running job's points were not mirrored")
    assert api.post("/api/job/stop", params={"id": sleeper}).status_code == 200
    seen = _until(api, sleeper, lambda s: s["mirror"]["state"] == "done", "the stopped job's run did not end")
    client = MlflowClient(tracking_uri=mlflow_server.url)
    run_id = seen["mirror"]["mlflow_run_id"]
    assert client.get_run(run_id).info.status == "KILLED"
    # `sf job retry`: the same job again, whose run is marked running again and ended again when it is stopped
    assert api.post("/api/job/retry", params={"id": sleeper}).status_code == 200
    _until(api, sleeper, lambda s: s["mirror"]["state"] == "mirroring" and s["mirror"]["run_status"] == "RUNNING"
           and s["job"]["status"] == "running", "the retried job's run was not marked running again")
    assert client.get_run(run_id).info.status == "RUNNING"
    assert api.post("/api/job/stop", params={"id": sleeper}).status_code == 200
    seen = _until(api, sleeper, lambda s: s["mirror"]["state"] == "done", "the retried job's run did not end")
    assert seen["mirror"]["mlflow_run_id"] == run_id and client.get_run(run_id).info.status == "KILLED"

    elsewhere = _custom_job(api, "elsewhere", "https://wandb.example.com/team/p", "echo hi\n")
    seen = _until(api, elsewhere, lambda s: s["mirror"] is not None, "no mirror decision")
    assert seen["mirror"]["state"] == "refused" and "mlflow.allow_hosts" in seen["mirror"]["error"]
    api.close()


def test_points_sent_while_the_server_is_down_arrive_when_it_is_back(mirror_console: ConsoleProcess,
                                                                     mlflow_server: MlflowServer) -> None:
    from mlflow import MlflowClient

    api = mirror_console.client(mirror_console.token_for(unique("mlf")))
    gate = Gate(mlflow_server.port)  # the job's tracking server is behind the gate, closed for now
    try:
        job = _custom_job(api, "outage", gate.url, REPORT.format(steps="range(4)"))
        seen = _until(api, job, lambda s: s["mirror"] and s["mirror"]["failures"] >= 1,
                      "the outage was not shown to the owner")
        assert "MLflow at" in seen["mirror"]["error"] and seen["mirror"]["state"] == "mirroring"
        gate.open()
        seen = _until(api, job, lambda s: s["mirror"]["state"] == "done", "the mirror did not catch up", timeout=180)
    finally:
        gate.close()
    assert seen["mirror"]["error"] is None and seen["mirror"]["failures"] == 0
    history = MlflowClient(tracking_uri=mlflow_server.url).get_metric_history(seen["mirror"]["mlflow_run_id"],
                                                                              "train/loss")
    assert sorted(m.step for m in history) == [0, 1, 2, 3]
    api.close()


def test_another_users_job_mirror_is_not_found(mirror_console: ConsoleProcess, mlflow_server: MlflowServer) -> None:
    owner = mirror_console.client(mirror_console.token_for(unique("mlf")))
    job = _custom_job(owner, "private", mlflow_server.url, "echo hi\n")
    other = mirror_console.client(mirror_console.token_for(unique("mlf")))
    assert other.get("/api/job/mirror", params={"id": job}).status_code == 404
    assert httpx.get(f"{mirror_console.url}/api/job/mirror", params={"id": job}).status_code == 401
    owner.close()
    other.close()


def test_a_platform_recipes_job_goes_to_the_operators_server(mirror_console: ConsoleProcess,
                                                              mlflow_server: MlflowServer) -> None:
    from mlflow import MlflowClient

    user = unique("mla")
    with mirror_console.client(mirror_console.token_for(user)) as api:
        spec = spec_for(api, "tinyrl/grpo", exp="experiments/platform",  # a platform recipe: no URL of its own
                        hyperparams={"max_num_steps": 4})
        job = admitted(submit(api, spec, data=bundle({"experiments/platform/config.yaml": "grpo: {}\n"})))
        seen = _until(api, job, lambda s: s["mirror"] and s["mirror"]["state"] in ("done", "refused", "gave_up")
                      or s["job"]["status"] == "failed", "the mirror did not finish")
        stored = api.get(f"/api/jobs/{job}/metrics").json()["series"]["train/loss"]
    assert seen["mirror"]["state"] == "done", seen
    assert seen["job"]["status"] == "succeeded", seen
    assert (seen["mirror"]["tracking_uri"], seen["mirror"]["run_status"]) == (mlflow_server.url, "FINISHED")
    client = MlflowClient(tracking_uri=mlflow_server.url)
    run = client.get_run(seen["mirror"]["mlflow_run_id"])
    assert run.data.tags["starforge.recipe"] == "tinyrl/grpo" and run.data.tags["starforge.owner"] == user
    mirrored = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, "train/loss"))
    assert mirrored and mirrored == sorted((step, value) for step, value, *_ in stored)  # every point the console holds
