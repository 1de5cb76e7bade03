"""The console's layering, checked on the source: every service module names its tier, the query tier never owns a
transaction, and every route is an adapter that calls at most one service function, with keyword arguments."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

CONSOLE = Path(__file__).resolve().parents[3] / "src" / "starforge" / "console"
SERVICES = CONSOLE / "services"
ROUTERS = CONSOLE / "api" / "routers"
TIER = re.compile(r"^Tier: (query|use case|shared)\b", re.MULTILINE)
# Modules whose docstring line is owned by work in flight elsewhere; their tier is stated here until it lands.
PENDING: dict[str, str] = {}  # modules still without a Tier line (none)
_TRANSACTION = re.compile(r"\.db\.(read|write)\(|\bRuntime\b")
_OPENS = re.compile(r"\.db\.(read|write)\(")
CONTEXT = SERVICES / "context.py"  # defines the runtime (shared): it may name `Runtime`, and must open nothing


def _service_modules() -> list[Path]:
    checks = SERVICES / "admission" / "checks"  # pure policy checks, kept pure by the test below
    return sorted(p for p in SERVICES.rglob("*.py") if checks not in p.parents and p != SERVICES / "__init__.py")


def _tier(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    found = TIER.search(docstring)
    if found is None:
        return PENDING.get(path.name, "")
    return found.group(1)


@pytest.mark.parametrize("path", _service_modules(), ids=lambda p: str(p.relative_to(SERVICES)))
def test_every_service_module_names_its_tier(path: Path) -> None:
    assert _tier(path) in ("query", "use case", "shared"), f"{path.name} does not say its tier (a 'Tier: …' line)"


@pytest.mark.parametrize("path", [p for p in _service_modules() if _tier(p) != "use case"],
                         ids=lambda p: str(p.relative_to(SERVICES)))
def test_queries_and_shared_modules_own_no_transaction(path: Path) -> None:
    code = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                     if not line.lstrip().startswith("#"))
    body = code.split('"""', 2)[-1]  # past the module docstring, which may name the tiers
    pattern = _OPENS if path == CONTEXT else _TRANSACTION
    assert not pattern.search(body), f"{path.name} is not a use case but opens a transaction or takes a Runtime"


def test_admission_checks_stay_pure() -> None:
    for path in (SERVICES / "admission" / "checks").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "sqlalchemy" not in text and "Session" not in text, path.name


def _route_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and isinstance(d.func.value, ast.Name)
            and d.func.value.id == "router" for d in node.decorator_list
        ):
            out.append(node)
    return out


def _service_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "services" and node.level == 3:
            names.update(alias.asname or alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("path", sorted(ROUTERS.glob("[!_]*.py")), ids=lambda p: p.name)
def test_routes_call_one_service_with_keywords(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    services = _service_names(tree)
    assert "sqlalchemy" not in path.read_text(encoding="utf-8")
    for route in _route_functions(tree):
        used = []
        for node in ast.walk(route):
            if isinstance(node, ast.With | ast.AsyncWith):
                managers = [ast.unparse(item.context_expr) for item in node.items]
                assert all(m.startswith(("spooled_body(", "submission_body(", "writer_parts(")) for m in managers), \
                    f"{route.name}: {managers}"
            if not isinstance(node, ast.Call):
                continue
            target = node.func
            args = node.args
            if isinstance(target, ast.Name) and target.id == "run_in_threadpool" and args:
                target, args = args[0], args[1:]
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                    target.value.id in services:
                used.append(ast.unparse(target))
                assert not args, f"{route.name} calls {ast.unparse(target)} with positional arguments"
        assert len(used) <= 1, f"{route.name} calls {used}: a route calls one service function"
