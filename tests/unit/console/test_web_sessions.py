"""The pure decisions behind web sessions and the per-client limits: origins, HTTPS, the backoff's schedule, and
the `trusted_proxies` setting that decides whose forwarded address is believed."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.console.services.throttle import Backoff
from starforge.console.settings import SettingsError, load_settings
from starforge.console.web.sessions import cookie_name, origin_of, reached_securely


def test_an_origin_is_scheme_host_and_a_port_other_than_the_default() -> None:
    assert origin_of("HTTPS://Console.Example:443/ui/") == "https://console.example"
    assert origin_of("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert origin_of("http://[::1]:8080/x") == "http://[::1]:8080"
    for none in ("null", "", "/ui/signin", "ftp://x", "http://x:notaport", "javascript:alert(1)"):
        assert origin_of(none) == "", none


def test_https_is_the_requests_scheme_or_an_https_public_url() -> None:
    assert reached_securely("https", "") and reached_securely("http", " HTTPS://forge.example")
    assert not reached_securely("http", "http://forge.example")
    assert (cookie_name(True), cookie_name(False)) == ("__Host-sf_session", "sf_session")


def test_the_backoff_is_free_then_doubles_up_to_its_ceiling() -> None:
    backoff = Backoff(free=2, first=1.0, factor=2.0, ceiling=5.0)
    assert [backoff.wait_after(n) for n in range(1, 8)] == [0.0, 0.0, 1.0, 2.0, 4.0, 5.0, 5.0]
    assert Backoff().wait_after(10_000) == Backoff().ceiling  # no overflow, however many failures


def test_trusted_proxies_are_addresses_or_networks(tmp_path: Path) -> None:
    config = tmp_path / "console.yaml"
    config.write_text("trusted_proxies: [127.0.0.1, 10.0.0.0/8, '::1']\n")
    settings = load_settings(config, state_dir=tmp_path / "state")
    assert settings.trusted_proxies == ("127.0.0.1/32", "10.0.0.0/8", "::1/128")
    assert load_settings(state_dir=tmp_path / "state").trusted_proxies == ()  # nobody's forwarded address by default
    config.write_text("trusted_proxies: [127.0.0.1, proxy.internal]\n")
    with pytest.raises(SettingsError, match=r"trusted_proxies\[1\]: 'proxy.internal' is not an IP address"):
        load_settings(config, state_dir=tmp_path / "state")
