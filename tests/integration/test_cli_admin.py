"""`sf admin` through the real `sf` against a real console: an administrator creates an account, caps it and gives
it a token over the API; the account logs in with it and sees its quota, is refused the admin commands, and is
refused on its next command once the token is revoked. HTTP edge cases: tests/unit/console/test_admin_tokens_api.py."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.test_cli_account import sf, token_login


def test_an_administrator_manages_an_account_over_the_api(console: ConsoleProcess, tmp_path: Path) -> None:
    admin_home, user_home = tmp_path / "admin", tmp_path / "user"
    token_login(console, admin_home, unique("root"), "admin")
    name = unique("ada")

    created = sf("admin", "user", "create", name, "--email", f"{name}@example.com", "--json", home=admin_home)
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["user"]["role"] == "operator"
    quota = sf("admin", "quota", "set", name, "--gpus", "3", "--jobs", "2", "--profiles", "cpu,h200", "--json",
               home=admin_home)
    assert quota.returncode == 0, quota.stderr
    assert json.loads(quota.stdout)["allowed_profiles"] == ["cpu", "h200"]
    issued = sf("admin", "token", "create", name, "--expires", "30d", "--name", "ci", "--json", home=admin_home)
    assert issued.returncode == 0, issued.stderr
    token = json.loads(issued.stdout)
    assert token["expires_at"] is not None and token["name"] == "ci"

    login = sf("login", "--server", console.url, "--token", token["token"], home=user_home)
    assert login.returncode == 0, login.stderr
    status = json.loads(sf("status", "--json", home=user_home).stdout)
    assert status["user"]["username"] == name
    assert (status["quota"]["max_concurrent_gpus"], status["quota"]["max_concurrent_jobs"]) == (3, 2)
    refused = sf("admin", "user", "ls", home=user_home)
    assert refused.returncode == 1 and "administrators only" in refused.stderr
    assert "administrator's token" in refused.stderr  # the hint says what is missing

    listed = sf("admin", "token", "ls", name, "--json", home=admin_home)
    rows = json.loads(listed.stdout)["tokens"]
    assert [r["name"] for r in rows] == ["created by an administrator", "ci"] and token["token"] not in listed.stdout
    unknown = sf("admin", "quota", "show", unique("ghost"), home=admin_home)
    assert unknown.returncode == 1 and "no user ghost" in unknown.stderr

    revoked = sf("admin", "token", "revoke", str(token["id"]), home=admin_home)
    assert revoked.returncode == 0, revoked.stderr
    after = sf("status", home=user_home)
    assert after.returncode == 1 and "token revoked" in after.stderr


def test_an_administrator_drains_and_resumes_the_console(console: ConsoleProcess, tmp_path: Path) -> None:
    home = tmp_path / "admin"
    token_login(console, home, unique("root"), "admin")
    drained = sf("admin", "maintenance", "drain", "--note", "restarting at noon", "--json", home=home)
    try:
        assert drained.returncode == 0, drained.stderr
        assert json.loads(drained.stdout)["maintenance_mode"] is True
        shown = sf("admin", "maintenance", home=home)
        assert shown.returncode == 0, shown.stderr
        assert "maintenance mode: on — restarting at noon" in shown.stdout and "safe to restart:" in shown.stdout
    finally:
        resumed = sf("admin", "maintenance", "resume", "--json", home=home)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["resuming"] is True and json.loads(resumed.stdout)["maintenance_mode"] is False
