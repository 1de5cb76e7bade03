"""The admission pipeline against a real console: every check, owner stamping, queueing, idempotency, bundles."""

from __future__ import annotations

import io
import json
import tarfile
import uuid

import httpx
import pytest

from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import admitted, bundle, spec_for, submit


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return raw.getvalue()


def _member(name: str, data: bytes = b"x", kind: bytes = tarfile.REGTYPE, link: str = "") -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data if kind == tarfile.REGTYPE else None


@pytest.fixture(scope="module")
def user(console: ConsoleProcess) -> httpx.Client:
    client = console.client(console.token_for(unique("adm")))
    yield client
    client.close()


def test_accepted_job_answers_the_wire_shape(user: httpx.Client) -> None:
    response = submit(user, spec_for(user, series="h200", gpus=8))
    assert response.status_code == 202, response.text  # h200 has no capacity here: pending, queued with a reason
    body = response.json()
    assert body["job_id"] == body["run_id"] and body["job_id"].startswith("r-") and len(body["job_id"]) == 12
    assert body["queued"] is True and "h200" in body["message"] and body["requested_gpus"] == 8
    assert isinstance(body["warnings"], list)
    rows = user.get("/api/jobs/mine", params={"limit": 1}).json()["jobs"]
    assert rows[0]["job_ref"] == body["job_id"] and rows[0]["status"] == "pending"


def test_owner_is_stamped_whatever_was_sent(user: httpx.Client) -> None:
    spec = spec_for(user, series="h200", gpus=8)
    spec["metadata"]["owner"] = "mallory"
    response = submit(user, spec)
    admitted(response, "pending")  # h200 has no capacity here
    assert any("mallory" in w for w in response.json()["warnings"])
    stored = user.get(f"/api/jobs/{response.json()['job_id']}/jobspec").json()
    assert stored["metadata"]["owner"] == user.get("/api/whoami").json()["username"]


def test_rejection_lists_every_problem_with_fields(user: httpx.Client) -> None:
    spec = spec_for(user)
    spec["spec"]["source"]["entrypoint"] = "python train.py"
    spec["spec"]["resources"]["pools"] = []
    spec["provenance"]["git_dirty"] = "no"
    response = submit(user, spec)
    assert response.status_code == 400
    body = response.json()
    assert [p["field"] for p in body["problems"]] == [
        "spec.source.entrypoint", "spec.resources.pools", "provenance.git_dirty"]
    lines = body["detail"].split("\n")
    assert lines[0] == "The JobSpec was rejected"
    assert lines[1].startswith("- spec.source.entrypoint: ")
    assert all(p["code"] and p["hint"] is not None for p in body["problems"])


def test_catalog_mismatch_is_refused_at_its_field(user: httpx.Client) -> None:
    spec = spec_for(user)
    spec["spec"]["recipe"]["digest"] = "sha256:" + "0" * 64
    body = submit(user, spec).json()
    assert body["problems"][0]["field"] == "spec.recipe.digest"


def test_old_core_version_names_both_versions(user: httpx.Client) -> None:
    spec = spec_for(user)
    spec["provenance"]["core_version"] = "0.3.2"
    problem = submit(user, spec).json()["problems"][0]
    assert problem["field"] == "provenance.core_version"
    assert "0.3.2" in problem["message"] and ">=0.4" in problem["message"]


def test_meta_must_match_the_spec(user: httpx.Client) -> None:
    spec = spec_for(user)
    response = user.post("/api/jobs", content=bundle(), headers={
        "Content-Type": "application/gzip",
        "X-Forge-Meta": json.dumps({"exp": "experiments/other", "profile": "cpu", "spec": spec})})
    assert response.status_code == 400 and response.json()["problems"][0]["field"] == "X-Forge-Meta.exp"
    missing = user.post("/api/jobs", content=bundle(), headers={"Content-Type": "application/gzip"})
    assert missing.status_code == 400 and missing.json()["problems"][0]["field"] == "X-Forge-Meta"


def test_large_meta_header_is_accepted(user: httpx.Client) -> None:
    spec = spec_for(user, series="h200", gpus=8)
    spec["metadata"]["display_name"] = "x" * 70_000
    admitted(submit(user, spec), "pending")


def test_idempotent_retry_returns_the_first_response(user: httpx.Client) -> None:
    key = uuid.uuid4().hex
    spec = spec_for(user, series="h200", gpus=8)
    first = submit(user, spec, key=key)
    second = submit(user, spec, key=key)
    assert first.status_code == second.status_code and first.json() == second.json()
    rows = user.get("/api/jobs/mine", params={"limit": 200}).json()["jobs"]
    assert sum(1 for r in rows if r["job_ref"] == first.json()["job_id"]) == 1


def test_multipart_submission_and_check_api(user: httpx.Client) -> None:
    spec = spec_for(user, series="h200", gpus=8)
    response = user.post("/api/jobs", files={"spec": (None, json.dumps(spec)), "profile": (None, "h200"),
                                             "bundle": ("bundle.tar.gz", bundle(), "application/gzip")})
    admitted(response, "pending")
    checked = user.post("/api/admission/check", json={"spec": spec, "profile": "h200:8"}).json()
    assert checked["ok"] is True and checked["requested_gpus"] == 8 and checked["problems"] == []
    bad = dict(spec, kind="ExportJob")
    verdict = user.post("/api/admission/check", json={"spec": bad}).json()
    assert verdict["ok"] is False and verdict["problems"][0]["field"] == "kind"


def test_a_setting_that_needs_a_gpu_is_refused_on_a_cpu_series_with_the_set_that_fixes_it(
        user: httpx.Client) -> None:
    def problems(series: str, gpus: int, **hyperparams: object) -> list[dict[str, object]]:
        spec = spec_for(user, "trl/sft", exp="experiments/sft", series=series, gpus=gpus, hyperparams=hyperparams,
                        model={"base": "Qwen/Qwen2.5-0.5B"}, data=data)
        checked = user.post("/api/admission/check", json={"spec": spec, "profile": f"{series}:{gpus}"})
        assert checked.status_code == 200, checked.text
        return [p for p in checked.json()["problems"] if not str(p["field"]).startswith("spec.data.")]

    data = {"train": {"dataset": "nobody/none@1"}, "validation": {"dataset": "nobody/none@1"}}

    refused = problems("cpu", 1)  # bf16 left out: TRL's default, true, fills it in
    assert [(p["field"], p["code"]) for p in refused] == [("spec.hyperparams.bf16", "needs_gpu")], refused
    assert "'cpu'" in str(refused[0]["message"]) and "--set bf16=false" in str(refused[0]["hint"])
    assert problems("cpu", 1, bf16=False) == []
    assert problems("h200", 8) == []  # a series with GPUs takes it
    spec = spec_for(user, "trl/sft", exp="experiments/sft", series="cpu", model={"base": "Qwen/Qwen2.5-0.5B"},
                    data=data)
    before = len(user.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"])
    answer = submit(user, spec, data=bundle({"experiments/sft/config.yaml": "bf16: true\n"}), profile="cpu")
    assert answer.status_code == 400 and "spec.hyperparams.bf16" in answer.json()["detail"], answer.text
    assert len(user.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]) == before


def test_check_stores_nothing(user: httpx.Client) -> None:
    before = len(user.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"])
    user.post("/api/admission/check", json={"spec": spec_for(user)})
    assert len(user.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]) == before


def test_image_allowlist_follows_docker_rules(user: httpx.Client) -> None:
    for image, ok in (("nvcr.io/nvidia/nemo-rl:v0.7.0", True), ("registry/nemo-rl-ext:v0.7.0", False),
                      ("ubuntu:22.04", False), ("registry.internal:5000/team/trainer:1.4", True),
                      ("registry.internal/team/trainer:1.4", False)):
        spec = spec_for(user, series="h200", gpus=8)
        spec["spec"]["framework"]["image"] = image
        response = submit(user, spec)
        if ok:
            admitted(response, "pending")
        else:
            assert response.json()["problems"][0]["field"] == "spec.framework.image", image


def test_an_upper_case_repository_is_refused_at_the_image_with_a_hint(user: httpx.Client) -> None:
    """Registries refuse upper case in a repository name: admission does too, with the same rule as `sf`."""
    spec = spec_for(user, series="h200", gpus=8)
    spec["spec"]["framework"]["image"] = "nvcr.io/NVIDIA/NeMo-RL:v0.7.0"  # an allowlisted registry
    verdict = user.post("/api/admission/check", json={"spec": spec}).json()
    [problem] = verdict["problems"]
    assert verdict["ok"] is False
    assert (problem["field"], problem["code"]) == ("spec.framework.image.reference", "invalid_image_reference")
    assert "'nvidia/nemo-rl'" in problem["message"] and "lower case" in problem["hint"]
    assert submit(user, spec).status_code == 400


def test_unknown_series_and_profile(user: httpx.Client) -> None:
    response = submit(user, spec_for(user, series="b300"), profile="b300")
    fields = [p["field"] for p in response.json()["problems"]]
    assert fields == ["X-Forge-Meta.profile", "spec.resources.pools[0].series"]


def test_undeclared_corpus_then_registered(console: ConsoleProcess, user: httpx.Client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    owner = user.get("/api/whoami").json()["username"]
    spec = spec_for(user, series="h200", gpus=8)
    spec["spec"]["data"] = {"corpus": f"{owner}/handbook@v1"}
    assert submit(user, spec).json()["problems"][0]["field"] == "spec.data.corpus"
    (tmp_path / "handbook").mkdir()
    console.sf("corpus", "add", f"{owner}/handbook@v1", str(tmp_path / "handbook"), check=True)
    admitted(submit(user, spec), "pending")
    spec["spec"]["data"] = {"corpus": f"{owner}/handbook"}  # latest version
    admitted(submit(user, spec), "pending")
    other = console.client(console.token_for(unique("other")))
    spec2 = spec_for(other, series="h200", gpus=8)
    spec2["spec"]["data"] = {"corpus": f"{owner}/handbook@v1"}  # private to its owner
    assert submit(other, spec2).json()["problems"][0]["field"] == "spec.data.corpus"
    other.close()


def test_plugin_digest_must_match_the_registry(user: httpx.Client) -> None:
    owner = user.get("/api/whoami").json()["username"]
    package = bundle({"plugin.yaml": "name: opsd-patch\nversion: 1.2.0\nsummary: test\n", "patch.py": "X = 1\n"})
    published = user.post("/api/plugins/publish", content=package, headers={"Content-Type": "application/gzip"})
    assert published.status_code == 200, published.text
    digest = published.json()["digest"]
    again = user.post("/api/plugins/publish", content=package, headers={"Content-Type": "application/gzip"})
    assert again.status_code == 409
    spec = spec_for(user, series="h200", gpus=8)
    spec["spec"]["plugins"] = [{"id": f"{owner}/opsd-patch", "version": "1.2.0", "digest": "sha256:" + "9" * 64}]
    problem = submit(user, spec).json()["problems"][0]
    assert problem["field"] == "spec.plugins[0]" and problem["code"] == "plugin_digest_mismatch"
    spec["spec"]["plugins"][0]["digest"] = digest
    admitted(submit(user, spec), "pending")
    assert user.patch(f"/api/plugins/{owner}/opsd-patch", json={"enabled": False}).json()["versions_affected"] == 1
    disabled = submit(user, spec).json()["problems"][0]
    assert disabled["field"] == "spec.plugins[0]" and "disabled" in disabled["message"]
    user.patch(f"/api/plugins/{owner}/opsd-patch", json={"enabled": True})
    admitted(submit(user, spec), "pending")


@pytest.mark.parametrize(
    "members",
    [
        [_member("/etc/passwd")],
        [_member("experiments/toy/../../escape")],
        [_member("experiments/toy/link", kind=tarfile.SYMTYPE, link="/etc/passwd")],
        [_member("experiments/toy/link", kind=tarfile.SYMTYPE, link="../../../x")],
        [_member("experiments/toy/dev", kind=tarfile.CHRTYPE)],
        [_member("experiments/toy/fifo", kind=tarfile.FIFOTYPE)],
    ],
    ids=["absolute", "dotdot", "symlink-abs", "symlink-out", "device", "fifo"],
)
def test_hostile_bundles_are_refused(console: ConsoleProcess, user: httpx.Client, members: list) -> None:  # type: ignore[type-arg]
    before = len(user.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"])
    response = submit(user, spec_for(user, series="h200", gpus=8), data=_tar(members))
    assert response.status_code == 400, response.text
    assert response.json()["problems"][0]["field"] == "bundle"
    assert len(user.get("/api/jobs/mine", params={"limit": 1000}).json()["jobs"]) == before


def test_not_a_bundle_is_refused(user: httpx.Client) -> None:
    response = submit(user, spec_for(user, series="h200", gpus=8), data=b"definitely not gzip")
    assert response.status_code == 400 and response.json()["problems"][0]["field"] == "bundle"


def test_admission_audit_log(user: httpx.Client) -> None:
    spec = spec_for(user)
    spec["kind"] = "Nope"
    submit(user, spec)
    decisions = user.get("/api/admissions/mine", params={"limit": 5}).json()["admissions"]
    assert decisions[0]["verdict"] == "rejected" and decisions[0]["problems"][0]["field"] == "kind"
