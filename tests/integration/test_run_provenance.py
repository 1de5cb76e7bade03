"""A run explains itself over HTTP against a real console process: what it is made of (`/inputs`), where it comes
from and what came of it (`/lineage`), and why two runs differ (`/diff`, `sf job diff` as a real CLI process);
another account's run is a 404 everywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import helpers
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.test_cli_account import sf, token_login

FILES = {"experiments/lr/config.yaml": "grpo:\n  max_num_steps: 3\n", "experiments/lr/train.md": "one\ntwo\n"}


def _submit(console: ConsoleProcess, token: str, lr: float, files: dict[str, str], **extra: object) -> str:
    with console.client(token) as api:
        spec = helpers.spec_for(api, exp="experiments/lr", hyperparams={"learning_rate": lr, "seed": 7}, **extra)
        return helpers.admitted(helpers.submit(api, spec, data=helpers.bundle(dict(files))))


@pytest.fixture(scope="module")
def runs(console: ConsoleProcess) -> Iterator[tuple[str, str, str, str]]:
    user = unique("prov")
    token = console.token_for(user)
    first = _submit(console, token, 1e-5, FILES, lifecycle={"on_success": ["export"]})
    second = _submit(console, token, 1e-4, {**FILES, "experiments/lr/train.md": "one\nthree\nfour\n"})
    with console.client(token) as api:
        for job in (first, second):
            helpers.wait_for_end(api, job, timeout=300)
    yield user, token, first, second


def test_inputs_say_what_a_run_is_made_of(console: ConsoleProcess, runs: tuple[str, str, str, str]) -> None:
    _user, token, first, _second = runs
    with console.client(token) as api:
        shown = api.get(f"/api/jobs/{first}/inputs").json()
    assert shown["recipe"]["name"] == "tinyrl/grpo" and shown["recipe"]["digest"]
    assert shown["hyperparameters"]["learning_rate"] == {"value": 1e-5}
    assert shown["seeds"] == {"seed": 7}
    assert shown["lab"]["commit"] == "3f2a9c1" and shown["lab"]["dirty"] is False
    assert shown["placement"]["profile"] == "cpu" and shown["attempts"] >= 1
    assert shown["config"]["policy"]["optimizer"]["kwargs"]["lr"] == 1e-5  # the hyperparameter at its config path
    assert "max_num_steps" in shown["config"]["grpo"]
    assert "/" not in json.dumps(shown["data_resolved"]).replace("…/", "")  # no host path


def test_lineage_names_the_follow_up(console: ConsoleProcess, runs: tuple[str, str, str, str]) -> None:
    _user, token, first, _second = runs
    with console.client(token) as api:
        tree = api.get(f"/api/jobs/{first}/lineage").json()
        assert tree["status"] == "succeeded", tree
        [child] = [c for c in tree["children"] if c["action"] == "export"]
        back = api.get(f"/api/jobs/{child['job_ref']}/lineage").json()
    assert back["parents"][0]["job_ref"] == first and back["parents"][0]["relation"] == "export of"


def test_diff_names_the_learning_rate_first(console: ConsoleProcess, runs: tuple[str, str, str, str]) -> None:
    _user, token, first, second = runs
    with console.client(token) as api:
        diff = api.get(f"/api/jobs/{first}/diff/{second}").json()
        same = api.get(f"/api/jobs/{second}/diff/{second}").json()
    assert diff["summary"] == "learning_rate: 1e-05 → 0.0001"
    assert diff["sections"][0]["name"] == "hyperparameters"
    assert diff["sections"][0]["changes"] == [{"key": "hyperparameters.learning_rate", "a": "1e-05", "b": "0.0001",
                                               "change": "changed"}]
    assert {"path": "experiments/lr/train.md", "status": "changed", "added": 2, "removed": 1} in diff["files"]
    assert not diff["identical"] and same["identical"] and same["summary"].startswith("The two runs are made of")
    assert diff["metrics"] and all({"key", "a", "b", "delta"} <= set(m) for m in diff["metrics"])


def test_another_accounts_run_is_a_404(console: ConsoleProcess, runs: tuple[str, str, str, str]) -> None:
    _user, _token, first, second = runs
    with console.client(console.token_for(unique("other"))) as api:
        for path in (f"/api/jobs/{first}/inputs", f"/api/jobs/{first}/lineage", f"/api/jobs/{first}/diff/{second}"):
            answer = api.get(path)
            assert answer.status_code == 404 and "detail" in answer.json(), path


def test_sf_job_diff_in_the_terminal_and_as_json(console: ConsoleProcess, runs: tuple[str, str, str, str],
                                                 forge_home: Path, tmp_path: Path) -> None:
    user, _token, first, second = runs
    token_login(console, forge_home, user)
    human = sf("job", "diff", first, second)
    assert human.returncode == 0, human.stderr
    lines = human.stdout.splitlines()
    assert "learning_rate: 1e-05 → 0.0001" in lines and "Hyperparameters" in lines
    assert lines.index("learning_rate: 1e-05 → 0.0001") < lines.index("Hyperparameters")
    assert "\x1b[" not in human.stdout  # no colour off a terminal
    as_json = sf("job", "diff", first, second, "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["summary"] == "learning_rate: 1e-05 → 0.0001"
    same = sf("job", "diff", first, first)
    assert same.returncode == 0 and "same inputs" in same.stdout
    unknown = sf("job", "diff", first, "r-nosuchrun0")
    assert unknown.returncode == 1 and "no job matches" in unknown.stderr
