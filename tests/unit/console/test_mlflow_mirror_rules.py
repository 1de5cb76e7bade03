"""The MLflow mirror's rules without a server: which observability URLs are mirrored (allowed hosts only; loopback
only when the operator says so; link-local metadata addresses never; credentials in the URL refused), the `mlflow:`
configuration block, and how a job's run is named."""

from __future__ import annotations

import json
import re

import pytest

from starforge.console.mirror_config import MlflowMirrorSettings, read_mlflow_mirror
from starforge.console.services.mirror.outbox import identity_of, record_failure
from starforge.console.services.mirror.targets import mirror_target
from starforge.console.store.models import Job, MlflowMirror

ALLOWED = MlflowMirrorSettings(allow_hosts=("mlflow.lab", "127.0.0.1", "meta.lab"))


def _resolver(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    return lambda host, _port: table.get(host, [])


RESOLVE = _resolver({"mlflow.lab": ["10.0.0.5"], "127.0.0.1": ["127.0.0.1"], "meta.lab": ["169.254.169.254"],
                     "other.lab": ["10.0.0.6"]})


def test_an_allowed_host_gives_its_tracking_uri_without_the_ui_fragment() -> None:
    target = mirror_target("https://mlflow.lab:5000/mlflow/#/experiments/3?x=1", ALLOWED, resolver=RESOLVE)
    assert (target.tracking_uri, target.refused) == ("https://mlflow.lab:5000/mlflow", "")


@pytest.mark.parametrize(("url", "why"), [
    ("https://other.lab/", "mlflow.allow_hosts"),
    ("http://127.0.0.1:5000", "mlflow.allow_loopback"),
    ("http://meta.lab/", "link-local"),
    ("http://user:secret@mlflow.lab/", "credentials"),
    ("ftp://mlflow.lab/", "http(s)"),
    ("http://[::1", "not a valid URL"),
])
def test_refused_urls_say_why(url: str, why: str) -> None:
    target = mirror_target(url, ALLOWED, resolver=RESOLVE)
    assert target.tracking_uri == "" and why in target.refused


def test_loopback_only_when_the_operator_allows_it() -> None:
    settings = MlflowMirrorSettings(allow_hosts=("127.0.0.1:5000",), allow_loopback=True)
    assert mirror_target("http://127.0.0.1:5000", settings, resolver=RESOLVE).tracking_uri == "http://127.0.0.1:5000"
    assert "allow_hosts" in mirror_target("http://127.0.0.1:5001", settings, resolver=RESOLVE).refused


def test_an_unresolvable_host_is_refused() -> None:
    assert "does not resolve" in mirror_target("http://mlflow.lab", ALLOWED, resolver=_resolver({})).refused


def test_the_configuration_block_is_read_and_checked() -> None:
    assert not read_mlflow_mirror(None).on
    read = read_mlflow_mirror({"allow_hosts": ["MLflow.Lab "], "allow_loopback": True, "interval_seconds": 1})
    assert (read.allow_hosts, read.allow_loopback, read.interval_seconds, read.on) == (("mlflow.lab",), True, 1.0, True)
    for bad, key in (({"allow_hosts": "mlflow.lab"}, "mlflow.allow_hosts"), ({"interval_seconds": 0}, "interval"),
                     ({"max_failures": 0}, "mlflow.max_failures"), ({"tokens": 1}, "mlflow.tokens"),
                     ({"allow_loopback": "yes"}, "mlflow.allow_loopback"), ([], "mapping")):
        with pytest.raises(ValueError, match=key):
            read_mlflow_mirror(bad)


def test_mirror_all_names_a_server_on_the_allowlist() -> None:
    read = read_mlflow_mirror({"allow_hosts": ["mlflow.lab:5000"], "mirror_all": " http://mlflow.lab:5000/ "})
    assert read.mirror_all == "http://mlflow.lab:5000/" and read_mlflow_mirror({"allow_hosts": ["x"]}).mirror_all == ""
    for bad, words in (("http://elsewhere:5000", "not an MLflow server this console mirrors to"),
                       ("ftp://mlflow.lab:5000", "http(s) URL"), ("http://me:pw@mlflow.lab:5000", "credentials"),
                       ("http://mlflow.lab:99999", "not a valid URL"), (5000, "must be the URL")):
        with pytest.raises(ValueError, match=r"mlflow\.mirror_all: .*" + re.escape(words)):
            read_mlflow_mirror({"allow_hosts": ["mlflow.lab:5000"], "mirror_all": bad})


def test_a_jobs_run_is_named_after_its_project_experiment_and_name() -> None:
    spec = {"spec": {"hyperparams": {"learning_rate": 0.001, "max_num_steps": 12, "mode": "fast"}},
            "provenance": {"git_commit": "abc1234"}}
    job = Job(id="r-1", username="alice", name="toy", exp="experiments/toy", project="lab", recipe="tinyrl/grpo",
              spec_json=json.dumps(spec), meta_json="{}")
    identity = identity_of(job)
    assert (identity.experiment, identity.run_name) == ("lab/toy", "toy")
    assert identity.params == {"learning_rate": "0.001", "max_num_steps": "12", "mode": "fast"}
    assert identity.tags == {"starforge.job_ref": "r-1", "starforge.recipe": "tinyrl/grpo", "starforge.owner": "alice",
                             "starforge.experiment": "experiments/toy", "mlflow.source.git.commit": "abc1234"}
    job.project = ""
    assert identity_of(job).experiment == "toy"


def test_failures_back_off_then_give_up() -> None:
    row = MlflowMirror(job_id="r-1", state="mirroring", failures=0, next_try_at=0.0)
    waits = []
    for _ in range(3):
        record_failure(row, "MLflow at http://x: refused", 100.0, interval=1.0, max_failures=3)
        waits.append(row.next_try_at - 100.0)
    assert waits == [2.0, 4.0, 8.0] and row.state == "gave_up" and row.error.startswith("MLflow at")
