"""The declared import graph (`[tool.importlinter]` in pyproject.toml) holds: every contract is kept.

import-linter follows relative and indirect imports, including imports inside functions, so a `from ..console
import app` added to the runner, or a console module reaching the lab through another package, fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_import_contract_is_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
