"""`sf plugin` through the real `sf` against a real console: publish a folder (the console's digest is the folder's
own), list, show, disable and enable it; another account may not change it, and an unknown plugin is a 404.
The package and digest check in detail: tests/unit/client/test_plugin_publish.py."""

from __future__ import annotations

import json
from pathlib import Path

from starforge.bundle import directory_digest
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.test_cli_account import sf, token_login


def _listed(home: Path, plugin_id: str) -> dict[str, object]:
    done = sf("plugin", "ls", "--json", home=home)
    assert done.returncode == 0, done.stderr
    return next(p for p in json.loads(done.stdout)["plugins"] if p["id"] == plugin_id)


def test_publish_list_disable_and_enable_a_plugin(console: ConsoleProcess, tmp_path: Path) -> None:
    owner, other = unique("pia"), unique("otto")
    owner_home, other_home = tmp_path / "owner", tmp_path / "other"
    token_login(console, owner_home, owner)
    token_login(console, other_home, other)
    folder = tmp_path / "opsd-patch"
    (folder / "opsd_patch").mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: opsd-patch\nversion: 1.2.0\nsummary: on-policy self-distillation\n",
                                        encoding="utf-8")
    (folder / "opsd_patch" / "__init__.py").write_text("PATCH = True\n", encoding="utf-8")
    plugin_id = f"{owner}/opsd-patch"

    published = sf("plugin", "publish", str(folder), "--json", home=owner_home)
    assert published.returncode == 0, published.stderr
    answer = json.loads(published.stdout)
    assert (answer["id"], answer["version"], answer["digest"]) == (plugin_id, "1.2.0", directory_digest(folder))
    again = sf("plugin", "publish", str(folder), home=owner_home)
    assert again.returncode == 1 and "already published" in again.stderr
    assert _listed(owner_home, plugin_id) == {"id": plugin_id, "kind": "plugin", "latest_version": "1.2.0",
                                              "enabled": True, "summary": "on-policy self-distillation"}

    disabled = sf("plugin", "disable", plugin_id, "--json", home=owner_home)
    assert json.loads(disabled.stdout) == {"id": plugin_id, "versions_affected": 1}, disabled.stderr
    shown = json.loads(sf("plugin", "show", plugin_id, "--version", "1.2.0", "--json", home=owner_home).stdout)
    assert shown["enabled"] is False and shown["digest"] == answer["digest"]
    foreign = sf("plugin", "enable", plugin_id, home=other_home)
    assert foreign.returncode == 1 and "only the owner" in foreign.stderr
    enabled = sf("plugin", "enable", plugin_id, home=owner_home)
    assert enabled.returncode == 0 and f"Enabled {plugin_id} (1 version)" in enabled.stderr

    missing = sf("plugin", "show", f"{other}/opsd-patch", home=other_home)
    assert missing.returncode == 1 and f"no plugin {other}/opsd-patch" in missing.stderr
