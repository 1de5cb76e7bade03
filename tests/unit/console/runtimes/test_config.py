"""`runtimes:` of the console configuration: defaults, accepted values, and a SettingsError naming each bad key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from starforge.console.settings import SettingsError, load_settings
from starforge.engines.runtimes import RuntimeSettings


def _load(tmp_path: Path, runtimes: object) -> RuntimeSettings:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"runtimes": runtimes}), encoding="utf-8")
    return load_settings(config, state_dir=tmp_path / "state").runtimes


def test_defaults_live_in_the_user_cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    settings = load_settings(state_dir=tmp_path / "state").runtimes
    assert settings.cache_dir == (tmp_path / "xdg" / "starforge" / "runtimes").resolve()
    assert settings.hub_cache == (tmp_path / "xdg" / "starforge" / "hub").resolve()
    assert settings.installer == "auto" and settings.cpu_torch == "auto" and settings.cpu_series == ("cpu",)


def test_values_are_read(tmp_path: Path) -> None:
    settings = _load(tmp_path, {"cache_dir": str(tmp_path / "rt"), "installer": "pip", "cpu_torch": "torch==2.13.0+cpu",
                                "cpu_series": ["cpu", "epyc"], "requires": {"trl-1.10.0": ["peft"]},
                                "build_workers": 3})
    assert settings.cache_dir == (tmp_path / "rt").resolve()
    assert settings.cpu_torch == "torch==2.13.0+cpu"
    assert settings.cpu_series == ("cpu", "epyc")
    assert settings.requires == {"trl-1.10.0": ("peft",)}
    assert settings.build_workers == 3


@pytest.mark.parametrize(("raw", "names"), [
    ({"cache_dri": "/x"}, "unknown keys cache_dri"),
    ({"installer": "conda"}, "runtimes.installer"),
    ({"cpu_torch": "numpy==1.0"}, "runtimes.cpu_torch"),
    ({"cpu_torch": "torch=="}, "runtimes.cpu_torch"),
    ({"cpu_index_url": "ftp://x"}, "runtimes.cpu_index_url"),
    ({"cpu_series": "cpu"}, "runtimes.cpu_series"),
    ({"requires": ["trl"]}, "runtimes.requires"),
    ({"requires": {"trl-1.10.0": [""]}}, "runtimes.requires.trl-1.10.0"),
    ({"build_workers": 0}, "runtimes.build_workers"),
    ({"build_timeout": True}, "runtimes.build_timeout"),
    ({"console_env": "yes"}, "runtimes.console_env"),
    ({"cache_dir": ""}, "runtimes.cache_dir"),
    ("/tmp/cache", "runtimes: must be a mapping"),
])
def test_a_bad_value_is_refused_naming_its_key(tmp_path: Path, raw: object, names: str) -> None:
    with pytest.raises(SettingsError, match=names.replace(".", r"\.")):
        _load(tmp_path, raw)


def test_caches_never_lie_inside_the_state_folder(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="runtimes.cache_dir: .* outside the state directory"):
        _load(tmp_path, {"cache_dir": str(tmp_path / "state" / "runtimes")})
    with pytest.raises(SettingsError, match="runtimes.hub_cache"):
        _load(tmp_path, {"hub_cache": str(tmp_path)})  # holding the state folder


@pytest.mark.parametrize("caches", [
    {"cache_dir": "STATE/runtimes"},  # jobs would see the state folder
    {"hub_cache": "STATE/hub"},
    {"hub_cache": "TMP/c", "cache_dir": "TMP/c/runtimes"},  # an account named `runtimes` would write every runtime
    {"hub_cache": "TMP/c/hub", "cache_dir": "TMP/c"},
    {"hub_cache": "LINK/runtimes", "cache_dir": "TMP/c/runtimes"},  # the same folder through a link
])
def test_caches_never_nest_in_the_state_folder_or_in_each_other(tmp_path: Path, caches: dict[str, str]) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "c")
    where = {"STATE": str(tmp_path / "state"), "TMP": str(tmp_path), "LINK": str(tmp_path / "link")}
    values = {key: path.replace(path.split("/")[0], where[path.split("/")[0]], 1) for key, path in caches.items()}
    with pytest.raises(SettingsError, match=r"runtimes\.(cache_dir|hub_cache)"):
        _load(tmp_path, values)
    _load(tmp_path, {"hub_cache": str(tmp_path / "c" / "hub"), "cache_dir": str(tmp_path / "c" / "runtimes")})
