"""X-Forge-Meta: key order, bare profile, values taken from the spec, ASCII-only encoding."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

from starforge.client import bare_profile, build_meta, encode_meta
from starforge.client._meta import empty_bundle

SPEC = {
    "apiVersion": "forge/v2",
    "kind": "TrainingJob",
    "metadata": {"name": "my-grpo", "project": "démo"},
    "spec": {"source": {"exp": "experiments/my-grpo"}, "hyperparams": {"note": "中文"}},
    "provenance": {"core_version": "0.4.0", "git_commit": "18f8067", "config_sha": "ae3b1bda6541"},
}


def test_keys_in_wire_order_with_values_from_the_spec() -> None:
    meta = build_meta(SPEC, profile="actor,rollout=h200:8")
    assert list(meta) == ["exp", "profile", "git_commit", "git_dirty", "config_sha", "project", "spec"]
    assert meta["exp"] == "experiments/my-grpo"
    assert meta["profile"] == "h200"
    assert (meta["git_commit"], meta["git_dirty"], meta["config_sha"]) == ("18f8067", False, "ae3b1bda6541")
    assert meta["project"] == "démo"
    assert meta["spec"] is SPEC


def test_explicit_values_and_extras_come_before_spec() -> None:
    meta = build_meta(
        SPEC,
        profile="h100",
        exp="experiments/other",
        extra={"git_dirty": True, "git_commit": "abcdef1", "sweep_id": "sweep-x-1", "spec": "ignored", "exp": "no"},
    )
    assert list(meta) == ["exp", "profile", "git_commit", "git_dirty", "config_sha", "project", "sweep_id", "spec"]
    assert (meta["exp"], meta["git_commit"], meta["git_dirty"]) == ("experiments/other", "abcdef1", True)
    assert meta["spec"] is SPEC


def test_empty_project_and_unknown_provenance_are_left_out_but_dirty_is_always_sent() -> None:
    spec = {"spec": {"source": {"exp": "experiments/e"}}, "metadata": {"project": ""}}
    meta = build_meta(spec, profile="h200")
    assert list(meta) == ["exp", "profile", "git_dirty", "spec"]
    assert meta["git_dirty"] is False


def test_encoding_is_compact_ascii_and_round_trips() -> None:
    header = encode_meta(build_meta(SPEC, profile="h200:1"))
    assert header.isascii()
    assert "\\u00e9" in header and "\\u4e2d\\u6587" in header
    assert header.startswith('{"exp":"experiments/my-grpo","profile":"h200","git_commit":"18f8067","git_dirty":false,')
    header.encode("latin-1")
    assert json.loads(header.encode("latin-1").decode("latin-1"))["spec"] == SPEC


def test_bare_profile() -> None:
    assert bare_profile("h200") == "h200"
    assert bare_profile(" h200:16 ") == "h200"
    assert bare_profile("actor,rollout = h200:8") == "h200"
    assert bare_profile("=h100") == "h100"


def test_empty_bundle_is_a_deterministic_empty_gzip_tar() -> None:
    data = empty_bundle()
    assert data == empty_bundle()
    assert gzip.decompress(data)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        assert archive.getmembers() == []
