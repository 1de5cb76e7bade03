"""The declared import graph (`[tool.importlinter]` in pyproject.toml) holds: every contract is kept, and no module
of `src/` is part of an import circle.

import-linter follows relative and indirect imports, including imports inside functions, so a `from ..console
import app` added to the runner, or a console module reaching the lab through another package, fails here.
import-linter 2.x has no contract for circles between modules (its `acyclic_siblings` compares whole sibling
packages), so the circles are found here on the graph it builds with grimp.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[2]


def test_every_import_contract_is_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_module_of_src_is_part_of_an_import_circle() -> None:
    """No module of `src/` reaches itself again through imports.

    Every import counts: at the top of a module, inside a function (a lazy import is still a circle, only one that
    fails later) and under `TYPE_CHECKING` (a circle of types is one of design). A package's `__init__` is a module
    like any other: `from pkg import name` is an arrow to it, so an `__init__` that re-exports a submodule which
    imports that `__init__` back is a circle; a submodule is not taken to import its parent package merely by being
    inside it (Python loads the parent first, but no code asks for it).
    """
    sys.path.insert(0, str(REPO / "src"))
    try:
        graph = grimp.build_graph("starforge", include_external_packages=False, cache_dir=None)
    finally:
        sys.path.remove(str(REPO / "src"))
    edges = {module: {m for m in graph.find_modules_directly_imported_by(module) if m in graph.modules}
             for module in graph.modules}
    assert _cycles(edges) == []


def test_the_circle_finder_finds_circles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert _cycles(edges) == [["a", "b", "c"]]  # a module importing itself is no circle between modules
    assert _cycles({"x": {"y"}, "y": set()}) == []
