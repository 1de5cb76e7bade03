"""The MCP SDK stays out of `sf --help`, `sf mcp --help` and a console no MCP request has reached."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _modules(code: str) -> set[str]:
    script = f"import sys, json\n{code}\nsys.stdout.write('\\n' + json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _mcp(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "mcp" or m.startswith(("mcp.", "starforge.mcp", "httpx2"))}


def test_sf_help_and_sf_mcp_help_do_not_import_the_sdk() -> None:
    assert _mcp(_modules("from starforge.cli.main import main\nmain(['--help'])")) == set()
    code = "from starforge.cli.main import main\ntry:\n    main(['mcp', '--help'])\nexcept SystemExit:\n    pass"
    assert _mcp(_modules(code)) == set()


def test_the_console_app_does_not_import_the_sdk_until_a_request_needs_it(tmp_path: Path) -> None:
    code = ("from starforge.console.app import create_app\nfrom starforge.console.settings import load_settings\n"
            f"app = create_app(load_settings(state_dir={str(tmp_path)!r}, run_background=False))\n"
            "assert any(getattr(r, 'path', '') == '/api/mcp/rpc' for r in app.routes)")
    assert _mcp(_modules(code)) == set()
