"""An optional extra that is not installed is named with its install command, never a traceback: `sf console up`
and `sf mcp` without the `console` extra, and the Ray engine without the `ray` extra.

The absent package is simulated in the real `sf` executable by a meta-path blocker put first on PYTHONPATH (a
`sitecustomize`), so nothing is uninstalled from the shared environment.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

SF = str(Path(sys.executable).with_name("sf"))
REPO = Path(__file__).resolve().parents[3]
BLOCKER = """\
import os, sys
from importlib.abc import MetaPathFinder

_BLOCKED = set(os.environ["SF_TEST_BLOCK_MODULES"].split(","))


class _Absent(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Absent())
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sf_without(tmp_path: Path, modules: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real `sf args…` as if the packages `modules` (comma-separated) were not installed."""
    (tmp_path / "blocker").mkdir(exist_ok=True)
    (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(tmp_path / "blocker"), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "SF_TEST_BLOCK_MODULES": modules,
           "NO_COLOR": "1", "FORGE_HOME": str(tmp_path / "home")}
    return subprocess.run([SF, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def _names_the_extra(done: subprocess.CompletedProcess[str], extras: str) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert f"needs the `{extras.split(',')[-1]}` extra" in done.stderr, done.stderr
    assert f"uv tool install --reinstall '.[{extras}]'" in done.stderr, done.stderr


@pytest.mark.parametrize("module", ["starlette", "sqlalchemy"])
def test_console_up_without_the_console_extra_names_it(tmp_path: Path, module: str) -> None:
    done = sf_without(tmp_path, module, "console", "up", "--state-dir", str(tmp_path / "state"),
                      "--port", str(_free_port()))
    _names_the_extra(done, "console")
    assert f"no module named {module!r}" in done.stderr


def test_sf_mcp_without_the_console_extra_names_it(tmp_path: Path) -> None:
    _names_the_extra(sf_without(tmp_path, "mcp", "mcp"), "console")


def test_the_ray_engine_without_the_ray_extra_names_it(tmp_path: Path) -> None:
    done = sf_without(tmp_path, "ray", "console", "up", "--state-dir", str(tmp_path / "state"),
                      "--port", str(_free_port()), "--executor", "ray", "--ray-address", "http://127.0.0.1:9")
    _names_the_extra(done, "console,ray")
    assert "the Ray engine" in done.stderr


def test_the_module_table_covers_every_requirement_of_the_extras() -> None:
    from starforge.extras import EXTRA_MODULES

    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extra in ("console", "ray"):
        wanted = {re.split(r"[\[<>=~!; ]", req, maxsplit=1)[0].lower() for req in declared[extra]}
        named = {dist for ext, dist in EXTRA_MODULES.values() if ext == extra}
        assert named == wanted, extra


def test_the_readme_installs_sf_with_the_console_extra() -> None:
    """The README's way of putting `sf` on the PATH gives a console that starts (`sf console up`)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    installs = re.findall(r"(?:uv tool install|pipx install) (\S+)", readme)
    assert installs and all("[console" in target for target in installs), installs
