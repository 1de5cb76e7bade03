"""Digest vectors of recipes-and-locks §5 and wire-protocol §6.2, and the goldens of the official catalogs."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.bundle import directory_digest
from starforge.recipes import (
    bundle_digest,
    canonical_json,
    catalog_digest,
    load_catalog,
    manifest_digest_of_text,
)
from starforge.recipes._digests import load_yaml

VECTOR_TEXT = "name: demo\nversion: 1.0.0\nlr: 1e-6\nmin_lr: 1.0e-6\nflag: on\nratio: 0.5\ntitle: 演示\n"
VECTOR_CANONICAL = '{"flag":true,"lr":"1e-6","min_lr":1e-06,"name":"demo","ratio":0.5,"title":"演示","version":"1.0.0"}'
VECTOR_DIGEST = "sha256:f9d4f5f782d67ea012ba9fbec84fae17a812d4da9993ed624759aa089270ae78"
VECTOR_BUNDLE = "sha256:87f44536d07563f1dfa0397a3e77f7922278dea32db4a81ebf3120976020e305"

GRPO_0356_MANIFEST = "sha256:4497d249a6b57c6f9afcd5ccf3537db3ce7cd11664fca2d69cef706ae70bfe20"
GRPO_0338_MANIFEST = "sha256:410d8498af7ebd02fc1f2003e1cc4d34ff606fa9cfaa00145eedbd9f752f6d08"
GRPO_TEMPLATE = "sha256:1ad285b961f65d58d8d4f45bcf99cce0aacec1ab600be0972b8fd6bb37f9bb2a"
GRPO_0356_BUNDLE = "sha256:c0b900db15a7a0649710d510164220b638b6947aa40c5c7212f9a4bf7d54805a"
GRPO_0338_BUNDLE = "sha256:bfd553de051f07d17374af13defd876d8a147c2761f9399c66d1c367a7117ad9"
CUSTOM_MANIFEST = "sha256:6949a6a65e4f739518d58c9bf0a114584409ebcad9d485c7ba7637a6fe13fc00"
CUSTOM_TEMPLATE = "sha256:21e9706cc1d700112b48ca5a99c72bf58b1f0e43787865d7e41ded6717c69529"
CUSTOM_MANIFEST_SCHEME = "sha256:66212238914253a13b427071fce48158706bd1c1f8333088e05d8ddee4b31ec2"
CUSTOM_TEMPLATE_SCHEME = "sha256:4b3aad40016aee1f0913cb844c3a4c8438f9162e94d5665f9274c0dd872aa4cf"
WIRE_CATALOG_DIGEST = "sha256:ff1348a637c5aedc5ca798e81fc39cc8afb99b821ea0609398f09f9f265d363d"


def test_manifest_digest_vector() -> None:
    assert canonical_json(load_yaml(VECTOR_TEXT)) == VECTOR_CANONICAL
    assert manifest_digest_of_text(VECTOR_TEXT) == VECTOR_DIGEST
    assert bundle_digest(VECTOR_DIGEST, None, "manifest") == VECTOR_BUNDLE


def test_empty_manifest_is_an_empty_object() -> None:
    assert canonical_json(load_yaml("")) == "{}"
    assert manifest_digest_of_text("# only a comment\n") == manifest_digest_of_text("")


def test_comments_and_formatting_do_not_matter() -> None:
    reformatted = "# a comment\nratio:   0.5\ntitle: \"演示\"\nflag: yes\nmin_lr: 1.0E-6\nlr: '1e-6'\nname: demo\nversion: '1.0.0'\n"
    assert manifest_digest_of_text(reformatted) == VECTOR_DIGEST


def test_directory_digest_vector(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "a.txt").write_bytes(b"hello\n")
    (tmp_path / "B.txt").write_bytes(b"")
    (tmp_path / "sub" / "b.py").write_bytes(b"print(1)\n")
    (tmp_path / "sub" / "b.pyc").write_bytes(b"\0")
    (tmp_path / "__pycache__" / "c").write_bytes(b"x")
    assert directory_digest(tmp_path) == "sha256:e09a4a7d8b06beffc36a677780996e1638105c597b7b95b9b77415df118d43de"


def test_catalog_digest_vector() -> None:
    entry = {"name": "nemo-rl/grpo", "version": "0.7.0", "digest": GRPO_0356_BUNDLE, "framework": "nemo-rl"}
    assert catalog_digest([entry]) == WIRE_CATALOG_DIGEST
    assert catalog_digest([{"name": "x"}]) != catalog_digest([])  # missing keys become null, order matters


def test_bundle_digest_rejects_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="unknown digest scheme"):
        bundle_digest(VECTOR_DIGEST, None, "template")
    with pytest.raises(ValueError, match="template digest"):
        bundle_digest(VECTOR_DIGEST, None, "manifest+template")


def test_official_0356_goldens(official_0356: Path) -> None:
    catalog = load_catalog(official_0356, overlays=False)
    grpo = catalog.get("nemo-rl/grpo")
    custom = catalog.get("custom/custom")
    assert grpo is not None and custom is not None
    assert (grpo.manifest_digest, grpo.template_digest) == (GRPO_0356_MANIFEST, GRPO_TEMPLATE)
    assert grpo.digest() == grpo.digest("manifest") == GRPO_0356_BUNDLE
    assert (custom.manifest_digest, custom.template_digest) == (CUSTOM_MANIFEST, CUSTOM_TEMPLATE)
    assert custom.digest("manifest") == CUSTOM_MANIFEST_SCHEME
    assert custom.digest("manifest+template") == CUSTOM_TEMPLATE_SCHEME


def test_official_0338_goldens(official_0338: Path) -> None:
    catalog = load_catalog(official_0338, scheme="manifest+template", overlays=False)
    grpo = catalog.get("nemo-rl/grpo")
    custom = catalog.get("custom/custom")
    assert grpo is not None and custom is not None
    assert (grpo.manifest_digest, grpo.template_digest) == (GRPO_0338_MANIFEST, GRPO_TEMPLATE)
    assert grpo.digest() == GRPO_0338_BUNDLE
    assert custom.digest() == CUSTOM_TEMPLATE_SCHEME
    assert custom.digest("manifest") == CUSTOM_MANIFEST_SCHEME


def test_wire_payload_vector(official_0356: Path) -> None:
    payload = load_catalog(official_0356, overlays=False).payload()
    first = payload["recipes"][0]
    assert first == {
        "name": "nemo-rl/grpo", "version": "0.7.0", "digest": GRPO_0356_BUNDLE, "framework": "nemo-rl",
        "adapter": "nemo-rl", "supported_framework_versions": ["0.7.0"],
        "runtime": {"default_version": "0.7.0", "versions": {"0.7.0": {"runtime_id": "nemo-rl-0.7.0"}}},
        "core_requires": ">=0.1,<1", "manifest_digest": GRPO_0356_MANIFEST, "template_digest": GRPO_TEMPLATE,
    }
    assert catalog_digest([first]) == WIRE_CATALOG_DIGEST
    assert payload["core"] == {"version": "0.3.56", "requirement": ">=0.3.56,<0.4"}
    assert payload["catalog_digest"] == catalog_digest(payload["recipes"])


@pytest.mark.parametrize(("fixture", "count"), [("official_032", 26), ("official_0338", 33), ("official_0356", 34)])
def test_every_official_catalog_loads(fixture: str, count: int, request: pytest.FixtureRequest) -> None:
    root = request.getfixturevalue(fixture)
    for scheme in ("manifest", "manifest+template"):
        catalog = load_catalog(root, scheme=scheme, overlays=False)
        assert len(catalog) == count
        payload = catalog.payload()
        assert [r["name"] for r in payload["recipes"]] == catalog.ids
        for recipe in catalog:
            assert recipe.params is not None and recipe.entrypoint.value  # every manifest parses fully


def test_the_libyaml_loader_types_like_the_python_one(official_0356: Path) -> None:
    import yaml

    for file in sorted(official_0356.glob("*/*/recipe.yaml")):
        text = file.read_text(encoding="utf-8")
        assert load_yaml(text) == yaml.load(text, Loader=yaml.SafeLoader), file  # noqa: S506
