"""`images:` of the console configuration: defaults, each key's checks, and the caches it must not nest with."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.console.settings import SettingsError, load_settings
from starforge.engines.images import DEFAULT_MAX_BYTES, RegistryAccess


def _settings(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    config = tmp_path / "config.yaml"
    config.write_text(text, encoding="utf-8")
    return load_settings(state_dir=tmp_path / "state", config_file=config)


def test_by_default_images_run_from_a_bounded_cache_with_anonymous_tls_access(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "{}\n")
    assert settings.images.run is True and settings.images.max_bytes == DEFAULT_MAX_BYTES
    assert settings.images.access("registry.example.com") == RegistryAccess(tls_verify=True, auth_file=None)


def test_each_registry_has_its_operator_given_access(tmp_path: Path) -> None:
    settings = _settings(tmp_path, f"images:\n  cache_dir: {tmp_path}/images\n  max_bytes: 1000000\n"
                         "  registries:\n    127.0.0.1:5055: {tls_verify: false}\n"
                         f"    Registry.Example.com: {{auth_file: {tmp_path}/auth.json}}\n")
    assert settings.images.cache_dir == tmp_path / "images" and settings.images.max_bytes == 1000000
    assert settings.images.access("127.0.0.1:5055").tls_verify is False
    assert settings.images.access("registry.example.com").auth_file == tmp_path / "auth.json"


@pytest.mark.parametrize(("text", "key"), [
    ("images: {max_bytes: 0}", "images.max_bytes"),
    ("images: {max_bytes: '10G'}", "images.max_bytes"),
    ("images: {run: 'yes'}", "images.run"),
    ("images: {pull_timeout: 0}", "images.pull_timeout"),
    ("images: {registries: {r.io: {tls_verify: 'no'}}}", "images.registries.r.io.tls_verify"),
    ("images: {registries: {r.io: {password: x}}}", "images.registries.r.io"),
    ("images: {colour: blue}", "images"),
])
def test_a_bad_value_is_refused_at_its_key(tmp_path: Path, text: str, key: str) -> None:
    with pytest.raises(SettingsError) as refused:
        _settings(tmp_path, text + "\n")
    assert str(refused.value).startswith(key), str(refused.value)


def test_the_image_cache_never_lies_in_the_state_folder(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as refused:
        _settings(tmp_path, f"images: {{cache_dir: {tmp_path}/state/images}}\n")
    assert "images.cache_dir" in str(refused.value) and "state directory" in str(refused.value)
