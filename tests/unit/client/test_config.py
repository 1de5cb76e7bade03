"""$FORGE_HOME: file modes, atomic JSON files, server precedence, corrupt files, credentials per server."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from starforge.client import ConfigError, Credentials, ForgeHome, Timeouts, normalise_server


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_created_directory_is_0700_and_files_0600(tmp_path: Path) -> None:
    home = ForgeHome(tmp_path / "forge", env={})
    home.save_server("http://127.0.0.1:8000/")
    home.save_credentials("http://127.0.0.1:8000", Credentials("tok"))
    assert mode(home.path) == 0o700
    assert mode(home.config_file) == 0o600
    assert mode(home.credentials_file) == 0o600
    assert sorted(p.name for p in home.path.iterdir()) == ["config.json", "credentials.json"]  # no temp files left


def test_rewriting_a_loose_file_makes_it_0600(tmp_path: Path) -> None:
    home = ForgeHome(tmp_path, env={})
    home.credentials_file.write_text("{}", encoding="utf-8")
    home.credentials_file.chmod(0o644)
    home.save_credentials("http://a", Credentials("tok"))
    assert mode(home.credentials_file) == 0o600


def test_credentials_are_keyed_by_server_without_trailing_slash(tmp_path: Path) -> None:
    home = ForgeHome(tmp_path, env={})
    home.save_credentials("http://a.example/", Credentials("A", "RA", 123.5, {"username": "alice"}))
    home.save_credentials("https://b.example/prefix", Credentials("B"))
    stored = json.loads(home.credentials_file.read_text(encoding="utf-8"))
    assert stored == {
        "http://a.example": {"access_token": "A", "refresh_token": "RA", "expires_at": 123.5,
                             "user": {"username": "alice"}},
        "https://b.example/prefix": {"access_token": "B", "refresh_token": None, "expires_at": None, "user": None},
    }
    assert home.credentials("http://a.example") == Credentials("A", "RA", 123.5, {"username": "alice"})
    assert home.credentials("https://b.example/prefix/") == Credentials("B")
    assert home.credentials("http://c.example") is None


def test_forget_removes_only_that_server(tmp_path: Path) -> None:
    home = ForgeHome(tmp_path, env={})
    home.save_credentials("http://a", Credentials("A"))
    home.save_credentials("http://b", Credentials("B"))
    assert home.forget("http://a/") == Credentials("A")
    assert home.forget("http://a") is None
    assert home.credentials("http://b") == Credentials("B")


def test_server_precedence_flag_then_environment_then_config(tmp_path: Path) -> None:
    ForgeHome(tmp_path, env={}).save_server("http://config:1")
    assert ForgeHome(tmp_path, env={}).resolve_server() == "http://config:1"
    env_home = ForgeHome(tmp_path, env={"FORGE_SERVER": "http://env:2/"})
    assert env_home.resolve_server() == "http://env:2"
    assert env_home.resolve_server("http://flag:3/") == "http://flag:3"


def test_no_public_default(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        ForgeHome(tmp_path, env={}).resolve_server()
    assert "no console configured: run `sf login --server URL`" in str(caught.value)


@pytest.mark.parametrize("bad", ["", "ftp://x", "127.0.0.1:8000", "http://"])
def test_server_must_be_an_http_url(bad: str) -> None:
    with pytest.raises(ConfigError):
        normalise_server(bad)


@pytest.mark.parametrize("name", ["config.json", "credentials.json"])
@pytest.mark.parametrize("text", ["{not json", "[1, 2]", ""])
def test_corrupt_file_stops_with_its_name(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    home = ForgeHome(tmp_path, env={"FORGE_SERVER": "http://a"})
    with pytest.raises(ConfigError) as caught:
        home.configured_server() if name == "config.json" else home.credentials("http://a")
    assert str(tmp_path / name) in str(caught.value)


def test_files_with_a_bom_are_read(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"server": "http://bom/"}).encode())
    assert ForgeHome(tmp_path, env={}).resolve_server() == "http://bom"


def test_malformed_entry_counts_as_not_logged_in(tmp_path: Path) -> None:
    (tmp_path / "credentials.json").write_text(json.dumps({"http://a": {"access_token": ""}, "http://b": 3}))
    home = ForgeHome(tmp_path, env={})
    assert home.credentials("http://a") is None
    assert home.credentials("http://b") is None


def test_from_env_uses_forge_home_else_dot_forge(tmp_path: Path) -> None:
    assert ForgeHome.from_env({"FORGE_HOME": str(tmp_path)}).path == tmp_path
    assert ForgeHome.from_env({}).path == Path.home() / ".forge"


def test_token_response_sets_expiry_sixty_seconds_early_and_keeps_what_is_missing() -> None:
    old = Credentials("A", "R1", 10.0, {"username": "alice"})
    fresh = Credentials.from_token_response({"access_token": "B", "expires_in": 600}, 1000.0, previous=old)
    assert fresh == Credentials("B", "R1", 1540.0, {"username": "alice"})
    rotated = Credentials.from_token_response({"access_token": "C", "refresh_token": "R2"}, 0.0, previous=old)
    assert (rotated.refresh_token, rotated.expires_at) == ("R2", 3540.0)
    assert not fresh.expired(1539.9) and fresh.expired(1540.0)
    assert not Credentials("T").expired(1e12)


def test_tokens_are_hidden_from_repr() -> None:
    assert "secret" not in repr(Credentials("secret", "secret"))


def test_timeouts_from_environment() -> None:
    assert Timeouts.from_env({}) == Timeouts()
    custom = Timeouts.from_env({"FORGE_HTTP_TIMEOUT": "40", "FORGE_HTTP_CONNECT_TIMEOUT": "2.5"})
    assert (custom.read, custom.connect, custom.auth, custom.submit) == (40.0, 2.5, 10.0, 300.0)
    with pytest.raises(ConfigError):
        Timeouts.from_env({"FORGE_HTTP_TIMEOUT": "soon"})
    with pytest.raises(ConfigError):
        Timeouts.from_env({"FORGE_HTTP_CONNECT_TIMEOUT": "0"})
