"""The console serves MCP without the client, the lab or the CLI: not imported, not even through `starforge.mcp`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src"
CONTRACT = """\
[importlinter]
root_package = starforge
[importlinter:contract:console]
name = the console never imports the client, the lab or the CLI
type = forbidden
source_modules = starforge.console
forbidden_modules =
    starforge.client
    starforge.lab
    starforge.cli
"""


def test_import_linter_finds_no_path_from_the_console_to_the_client_or_the_lab(tmp_path: Path) -> None:
    pytest.importorskip("importlinter")
    config = tmp_path / "contract.ini"
    config.write_text(CONTRACT, encoding="utf-8")
    linter = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(linter), "--config", str(config), "--no-cache"], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": str(linter.parent)}, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_serving_mcp_tools_loads_neither_the_client_nor_the_lab(tmp_path: Path) -> None:
    code = f"""
import json, sys, warnings
from fastapi.testclient import TestClient
from starforge.console import operator
from starforge.console.app import create_app
from starforge.console.settings import load_settings
warnings.simplefilter("ignore")
app = create_app(load_settings(state_dir={str(tmp_path)!r}, run_background=False))
token = operator.create_token(app.state.runtime.db, "alice", "operator", create=True)
headers = {{"Authorization": "Bearer " + token, "Accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18"}}
with TestClient(app) as client:
    for name, args in (("get_quota", {{}}), ("list_recipes", {{}}), ("show_recipe", {{"recipe": "tinyrl/grpo"}}),
                       ("explain_rejection", {{"spec": {{"apiVersion": "forge/v1"}}}})):
        body = {{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": name, "arguments": args}}}}
        answer = client.post("/api/mcp/rpc", json=body, headers=headers).json()
        assert not answer["result"].get("isError"), answer
sys.stdout.write(json.dumps(sorted(sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    assert "starforge.mcp" in loaded and "starforge.console.mcp_backend" in loaded
    assert not {m for m in loaded if m.startswith(("starforge.client", "starforge.lab", "starforge.cli"))}
