"""The product brief's example, admitted by a console with its corpus, dataset, plugin and artifact registered."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.brief import filled
from tests.integration.conftest import make_console
from tests.integration.helpers import bundle, catalog_entry, spec_for, submit

TEMPLATE = Path(__file__).resolve().parents[2] / "src/starforge/recipes/builtin/tinyrl/grpo/template/config.yaml"


def test_brief_example_is_admitted(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    console = make_console(tmp_path_factory, "sqlite", config={"capacity": {"cpu": 2}})
    console.start()
    try:
        api = console.client(console.token_for("alice"))
        for kind, ref in (("dataset", "alice/gsm8k-zh@v2"), ("corpus", "alice/handbook@v1")):
            (tmp_path / kind).mkdir()
            console.sf(kind, "add", ref, str(tmp_path / kind), check=True)
        package = bundle({"plugin.yaml": "name: opsd-patch\nversion: 1.2.0\nsummary: on-policy self-distillation\n",
                          "opsd_patch/__init__.py": "PATCH = True\n"})
        digest = api.post("/api/plugins/publish", content=package).json()["digest"]
        # a finished run of alice's whose checkpoint the example starts from
        seed = submit(api, spec_for(api, "tinyrl/grpo", exp="experiments/seed", hyperparams={"max_num_steps": 10}),
                      data=bundle({"experiments/seed/config.yaml": TEMPLATE.read_text()})).json()["job_id"]
        deadline = time.monotonic() + 60
        while api.get("/api/job", params={"id": seed}).json()["status"] != "succeeded":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        doc = filled(catalog_entry(api, "nemo-rl/grpo"), run_id=seed, plugin_digest=digest)
        response = submit(api, doc, profile="h200")
        assert response.status_code == 202, response.text  # admitted; h200 has no capacity here, so it waits
        body = response.json()
        assert body["queued"] is True and "h200" in body["message"]
        row = api.get("/api/job", params={"id": body["job_id"]}).json()
        assert row["status"] == "pending"
        stored = api.get(f"/api/jobs/{body['job_id']}/jobspec").json()
        assert stored["metadata"]["owner"] == "alice"
        assert stored["spec"]["hyperparams"] == {"learning_rate": 1e-6}
        assert stored["spec"]["data"] == doc["spec"]["data"]
        # another account cannot use alice's private data, artifact or plugin
        bob = console.client(console.token_for("bob"))
        refused = submit(bob, doc, profile="h200").json()["problems"]
        assert [p["field"] for p in refused] == ["spec.model.init_from", "spec.data.train.dataset",
                                                 "spec.data.corpus"]
        bob.close()
        api.close()
    finally:
        console.stop()
