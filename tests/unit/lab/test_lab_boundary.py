"""Lab concerns live in `starforge.lab`: recipes never import the lab, and the console never loads lock code."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import starforge.lab
import starforge.recipes

RECIPES = Path(starforge.recipes.__file__).resolve().parent
MOVED = ("read_lock", "write_lock", "expected_lock", "inspect_lock", "lock_diffs", "normalise_lock", "LockInspection",
         "LABELS", "LOCK_FILE", "LOCK_V4", "plan_upgrade", "apply_upgrade", "UpgradePlan", "UpgradeError",
         "resolve_experiment", "locked_experiments", "current_experiment", "read_config", "config_lookup")


def test_the_lab_names_moved_out_of_recipes() -> None:
    assert [n for n in MOVED if n in starforge.recipes.__all__ or hasattr(starforge.recipes, n)] == []
    assert [n for n in MOVED if n not in starforge.lab.__all__] == []


def test_recipes_never_import_the_lab() -> None:
    offenders = []
    for file in sorted(RECIPES.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            offenders += [f"{file.name}: {n}" for n in names if n.startswith(("starforge.lab", "..lab"))]
    assert offenders == []


def test_the_console_loads_no_lab_module(tmp_path: Path) -> None:
    code = ("import sys, json\nfrom starforge.console.app import create_app\n"
            "from starforge.console.settings import load_settings\n"
            f"create_app(load_settings(state_dir={str(tmp_path)!r}, run_background=False))\n"
            "sys.stdout.write('\\n' + json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert "starforge.recipes" in modules
    assert [m for m in modules if m.startswith("starforge.lab")] == []
