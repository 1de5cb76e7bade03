"""Models, corpora and volumes over the API, in process (the real app over ASGI, SQLite in a temporary state folder,
no background loops): pushed versions are immutable, a foreign private name is a 404, public ones are shared, bad
names and hostile archives are refused at their field, and admission resolves `spec.model.base` as
`<owner>/<name>@<version>` against the registry."""

from __future__ import annotations

import io
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.integration.helpers import spec_for
from tests.integration.test_hostile_parsing import InProcessConsole, build_console


def _tar(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


MODEL = _tar({"config.json": b'{"model_type": "tiny"}', "weights.bin": b"\x00" * 64})


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessConsole]:
    built = build_console(tmp_path_factory.mktemp("registry") / "state")
    yield built
    built.app.state.runtime.db.dispose()


@pytest.fixture(scope="module")
def client(console: InProcessConsole) -> TestClient:
    return console.client(None)


def _user(console: InProcessConsole) -> tuple[str, dict[str, str]]:
    name = f"u{uuid.uuid4().hex[:8]}"
    made = console.client("admin").post("/api/admin/users", json={"username": name})
    assert made.status_code == 200, made.text
    return name, {"Authorization": f"Bearer {made.json()['token']}"}


def _push(client: TestClient, auth: dict[str, str], collection: str, name: str, version: str,
          body: bytes = MODEL, **params: str) -> Any:
    return client.post(f"/api/{collection}/push", params={"name": name, "version": version, **params}, content=body,
                       headers={**auth, "Content-Type": "application/gzip"})


def test_models_are_immutable_private_by_default_and_shared_when_public(console: InProcessConsole,
                                                                        client: TestClient) -> None:
    state = console.state_dir
    owner, mine = _user(console)
    _other, theirs = _user(console)
    pushed = _push(client, mine, "models", "tiny", "v1", description="a two-file model")
    assert pushed.status_code == 200, pushed.text
    assert pushed.json() | {"total_bytes": 0} == {"ref": f"{owner}/tiny@v1", "id": f"{owner}/tiny", "version": "v1",
                                                  "visibility": "private", "files": 2, "total_bytes": 0}
    assert sorted(p.name for p in (state / "models" / owner / "tiny" / "v1").iterdir()) == ["config.json",
                                                                                          "weights.bin"]
    again = _push(client, mine, "models", "tiny", "v1")
    assert again.status_code == 409 and "immutable" in again.json()["detail"]
    assert _push(client, mine, "models", "open", "v1", visibility="public").status_code == 200

    listed = {m["id"]: m for m in client.get("/api/models", headers=mine).json()["models"]}
    assert listed[f"{owner}/tiny"] == {"id": f"{owner}/tiny", "versions": 1, "version_names": ["v1"],
                                       "production": None, "description": "a two-file model",
                                       "visibility": "private", "latest": "v1"}
    shown = client.get(f"/api/models/{owner}/tiny", headers=mine).json()
    assert shown["id"] == f"{owner}/tiny" and [v["version"] for v in shown["versions"]] == ["v1"]
    assert shown["versions"][0]["files"] == 2 and shown["versions"][0]["stage"] == "registered"

    seen = {m["id"] for m in client.get("/api/models", headers=theirs).json()["models"]}
    assert f"{owner}/open" in seen and f"{owner}/tiny" not in seen
    assert client.get(f"/api/models/{owner}/open", headers=theirs).status_code == 200
    for hidden in (f"{owner}/tiny", f"{owner}/none", "nobody/tiny"):
        answer = client.get(f"/api/models/{hidden}", headers=theirs)
        assert answer.status_code == 404 and "sf model ls" in answer.json()["detail"], answer.text
    assert client.get("/api/models").status_code == 401


def test_bad_names_and_hostile_archives_are_refused_at_their_field(console: InProcessConsole,
                                                                   client: TestClient) -> None:
    state = console.state_dir
    user, auth = _user(console)
    cases = {("bad name", "v1"): "model.name", ("ok", "v/1"): "model.version", ("ok", ""): "version",
             ("", "v1"): "name"}
    for (name, version), field in cases.items():
        answer = _push(client, auth, "models", name, version)
        assert answer.status_code == 400, answer.text
        assert field in [p["field"] for p in answer.json()["problems"]], answer.text
    foreign = _push(client, auth, "models", "tiny", "v1", owner="someone-else")
    assert foreign.status_code == 403 and "own namespace" in foreign.json()["detail"]

    for collection, kind in (("models", "model"), ("corpora", "corpus")):
        for hostile in _hostile_archives():
            answer = _push(client, auth, collection, "evil", "v1", body=hostile)
            assert answer.status_code == 400, answer.text
            assert {p["field"] for p in answer.json()["problems"]} == {kind}
        assert not (state / collection / user).exists()
    assert list((state / "datasets" / "_incoming").iterdir()) == []
    assert not (state.parent / "escape.txt").exists()


def _hostile_archives() -> list[bytes]:
    archives = []
    for name, kind, link in (("../escape.txt", tarfile.REGTYPE, ""), ("link", tarfile.SYMTYPE, "/etc/passwd"),
                             ("/abs.txt", tarfile.REGTYPE, "")):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.size = kind, link, 1 if kind == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(b"x") if kind == tarfile.REGTYPE else None)
        archives.append(buffer.getvalue())
    return archives


def _verdict(client: TestClient, auth: dict[str, str], **spec_extra: Any) -> dict[str, Any]:
    client.headers.update(auth)  # spec_for reads the catalog as this account
    try:
        spec = spec_for(client, **spec_extra)
        return dict(client.post("/api/admission/check", json={"spec": spec, "profile": "cpu:1"}).json())
    finally:
        client.headers.pop("Authorization", None)


def test_admission_resolves_registered_models_and_pushed_corpora(console: InProcessConsole,
                                                                 client: TestClient) -> None:
    owner, mine = _user(console)
    _other, theirs = _user(console)
    assert _push(client, mine, "models", "base", "v1").status_code == 200
    corpus = _push(client, mine, "corpora", "handbook", "v1", body=_tar({"a.md": b"# A\n"}))
    assert corpus.status_code == 200, corpus.text
    assert [c["id"] for c in client.get("/api/corpora", headers=mine).json()["corpora"]] == [f"{owner}/handbook"]

    admitted = _verdict(client, mine, model={"base": f"{owner}/base@v1"}, data={"corpus": f"{owner}/handbook@v1"})
    assert admitted["ok"] is True, admitted

    refused = _verdict(client, theirs, model={"base": f"{owner}/base@v1"})
    assert [(p["field"], p["code"]) for p in refused["problems"]] == [("spec.model.base", "model_unknown")]
    assert "sf model ls" in refused["problems"][0]["hint"]
    unknown = _verdict(client, mine, model={"base": f"{owner}/base@v9"})
    assert [p["code"] for p in unknown["problems"]] == ["model_unknown"]
    for bad, field in (("alice/base@", "spec.model.base.version"), ("a/b/c@v1", "spec.model.base"),
                       ("alice@v1", "spec.model.base")):
        malformed = _verdict(client, mine, model={"base": bad})
        assert malformed["ok"] is False and [p["field"] for p in malformed["problems"]] == [field], malformed
    hub = _verdict(client, mine, model={"base": "Qwen/Qwen3-0.6B"})
    assert hub["ok"] is True, hub


def test_volumes_list_what_the_caller_may_mount(console: InProcessConsole, client: TestClient,
                                               tmp_path: Path) -> None:
    _user_name, auth = _user(console)
    admin = {"Authorization": f"Bearer {console.tokens['admin']}"}
    for name, visibility in (("shared", "public"), ("locked", "private")):
        folder = tmp_path / name
        folder.mkdir()
        made = client.post("/api/admin/data", headers=admin, json={
            "kind": "volume", "ref": f"admin/{name}@v1", "path": str(folder), "visibility": visibility})
        assert made.status_code == 200, made.text
    rows = client.get("/api/volumes", headers=auth).json()["volumes"]
    assert rows == [{"id": "admin/shared", "visibility": "public", "allow_download": False, "allow_preview": False,
                     "description": "", "versions": ["v1"]}]
    assert {r["id"] for r in client.get("/api/volumes", headers=admin).json()["volumes"]} == {
        "admin/shared", "admin/locked"}  # administrators see every volume
