"""One module owns FORGE_HOME: `starforge.home` resolves the client state folder, and no other module reads it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from starforge.client import ForgeHome
from starforge.home import FORGE_HOME_VAR, forge_home
from starforge.recipes._env import cache_dir, overlay_roots

SRC = Path(__file__).resolve().parents[2] / "src" / "starforge"
OWNER = SRC / "home.py"


def test_the_variable_else_dot_forge() -> None:
    home = Path.home()
    assert forge_home({"FORGE_HOME": "/srv/forge"}) == Path("/srv/forge")
    assert forge_home({"FORGE_HOME": "~/state"}) == home / "state"
    assert forge_home({"FORGE_HOME": ""}) == forge_home({}) == home / ".forge"


def test_the_client_and_the_recipes_use_the_same_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGE_HOME", str(tmp_path))
    assert forge_home() == tmp_path
    assert ForgeHome.from_env().path == tmp_path
    assert ForgeHome.from_env({"FORGE_HOME": str(tmp_path / "other")}).path == tmp_path / "other"
    assert cache_dir() == tmp_path / "cache" / "recipes"
    assert overlay_roots()[-1] == tmp_path / "recipes"


def _reads(path: Path) -> list[str]:
    """Return where a module names the variable: the string "FORGE_HOME" or the owner's constant."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == FORGE_HOME_VAR:
            found.append(f"{path.relative_to(SRC)}:{node.lineno}")
        elif isinstance(node, ast.alias) and node.name == "FORGE_HOME_VAR":
            found.append(f"{path.relative_to(SRC)}: imports FORGE_HOME_VAR")
    return found


def test_no_other_module_reads_the_variable() -> None:
    offenders = [hit for file in sorted(SRC.rglob("*.py")) if file != OWNER for hit in _reads(file)]
    assert offenders == []


def test_the_owner_is_a_standard_library_leaf() -> None:
    tree = ast.parse(OWNER.read_text(encoding="utf-8"))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert [m for m in imported if m.split(".")[0] not in sys.stdlib_module_names | {"__future__"}] == []
