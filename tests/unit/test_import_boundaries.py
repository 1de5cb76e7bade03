"""Import boundaries: the contract, bundle and runner use the standard library only (they run inside jobs)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "starforge"

# package -> the starforge packages it may import
ALLOWED = {
    "contract": {"starforge.contract"},
    "bundle": {"starforge.bundle", "starforge.contract"},
    "wire": {"starforge.wire", "starforge.contract"},
    "runner": {"starforge.runner", "starforge.contract", "starforge.bundle", "starforge.wire"},
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_the_standard_library(package: str) -> None:
    files = sorted((SRC / package).rglob("*.py"))
    assert files, f"starforge.{package} has no modules"
    offenders = []
    for file in files:
        for name in _imports(file):
            top = name.split(".")[0]
            if top in sys.stdlib_module_names or top == "__future__":
                continue
            if top == "starforge" and any(name == a or name.startswith(a + ".") for a in ALLOWED[package]):
                continue
            offenders.append(f"{file.relative_to(SRC)}: {name}")
    assert offenders == []
