"""Cheap startup: `sf --help` and `sf --version` import none of Typer, httpx, Rich or YAML, and the command
modules defer httpx, Rich and YAML until a command runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("typer", "click", "httpx", "httpcore", "rich", "yaml")
COMMAND_MODULES = ("cmd_init", "cmd_login", "cmd_logout", "cmd_whoami", "cmd_status", "cmd_job", "cmd_new",
                   "cmd_validate", "cmd_ls", "cmd_submit", "cmd_serve")


def imported_after(code: str) -> set[str]:
    script = f"import sys, json\n{code}\nsys.stdout.write('\\n' + json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def heavy(modules: set[str], names: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in names)


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_root_flags_import_nothing_heavy(flag: str) -> None:
    modules = imported_after(f"from starforge.cli.main import main\nmain([{flag!r}])")
    assert heavy(modules) == []


@pytest.mark.parametrize("module", COMMAND_MODULES)
def test_command_modules_defer_httpx_rich_and_yaml(module: str) -> None:
    modules = imported_after(f"import starforge.cli.{module}")
    assert heavy(modules, ("httpx", "httpcore", "rich", "yaml")) == []


def test_validate_loads_neither_http_nor_the_bundle_nor_git(tmp_path: Path) -> None:
    """`sf validate` is run on every edit: a Typer command like the others, but no pydantic (Typer's coercion, which
    `cmd_validate._PlainTyper` skips), HTTP, Rich, tar/gzip or git."""
    code = (f"import os\nos.chdir({str(tmp_path)!r})\nfrom starforge.cli.main import main\n"  # no lab: exit 2, options parsed
            "assert main(['validate', '--help']) == 0 and main(['validate', 'toy', '--set', 'seed=1', '--json']) == 2\n"
            "import starforge.lab.validation, starforge.recipes")
    modules = imported_after(code)
    assert "typer" in modules  # the common CLI framework
    assert heavy(modules, ("pydantic", "httpx", "httpcore", "rich", "tarfile")) == []
    assert not [m for m in modules if m.startswith(("starforge.bundle", "starforge.lab.provenance", "starforge.client"))]
