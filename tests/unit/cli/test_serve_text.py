"""How `sf serve` renders services: expiry, table rows, and the OpenAI client snippet."""

from __future__ import annotations

from starforge.cli._serve_text import connect_text, epoch_of, expires_text, key_rows, service_rows


def test_times_in_either_shape() -> None:
    assert epoch_of(10) == 10.0
    assert epoch_of("1970-01-01T00:01:00Z") == 60.0
    assert epoch_of("1970-01-01T00:01:00") == 60.0
    assert epoch_of("soon") is None and epoch_of(True) is None


def test_expiry_words() -> None:
    assert expires_text({"status": "ready", "expires_at": 100 + 3 * 3600 + 300}, now=100) == "in 3h 05m"
    assert expires_text({"status": "ready", "expires_at": 160}, now=100) == "in 1m"
    assert expires_text({"status": "ready", "expires_at": 130}, now=100) == "in 30s"
    assert expires_text({"status": "ready", "expires_at": 90}, now=100) == "expired"
    assert expires_text({"status": "stopped", "expires_at": 900}, now=100) == "-"


def test_rows() -> None:
    rows = service_rows([{"id": "r-1", "model": "run:r-0", "status": "ready", "gpus": 0, "expires_at": 700,
                          "run_id": "r-0"}, {"id": "r-2"}], now=100)
    assert rows == [["r-1", "run:r-0", "ready", "0", "in 10m", "r-0"], ["r-2", "-", "-", "-", "-", "-"]]
    assert key_rows([{"id": 1, "name": "ci", "prefix": "sfk-ab", "created_at": 0, "revoked_at": None}]) == [
        ["1", "ci", "sfk-ab…", "1970-01-01 00:00 UTC", ""]]


def test_connect_text_names_the_full_base_url() -> None:
    text = connect_text("http://127.0.0.1:9/", {"id": "r-1", "url": "/api/services/r-1/v1"})
    assert 'OpenAI(base_url="http://127.0.0.1:9/api/services/r-1/v1"' in text
    assert "sf serve key add r-1" in text
