"""Install StarForge (editable, with the given extras) into a venv: with uv when it can be had (about a tenth of pip's
time), given pip's own package sources — uv does not read pip's configuration — and with pip otherwise.

Usage: python scripts/install_venv.py VENV EXTRAS   (EXTRAS: e.g. console,dev). Run by the Makefile.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from starforge.engines.runtimes.pipconfig import read_pip_config  # noqa: E402  (stdlib only)

QUIET_PIP = ["--quiet", "--disable-pip-version-check"]


def _uv(python: str) -> str:
    """Return the venv's uv, installing it with pip first; "" when that fails."""
    uv = Path(python).with_name("uv")
    if not uv.is_file():
        done = subprocess.run([python, "-m", "pip", "install", *QUIET_PIP, "uv"], capture_output=True, text=True)
        if done.returncode != 0:
            return ""
    return str(uv) if uv.is_file() else ""


def main(venv: str, extras: str) -> int:
    """Install the project with `extras` into `venv`; return the installer's exit code."""
    python = str(Path(venv) / "bin" / "python")
    target = f"{ROOT}[{extras}]"
    uv = _uv(python)
    if uv:
        sources = read_pip_config(python).uv_args()
        command = [uv, "pip", "install", "--quiet", "--python", python, "--index-strategy", "unsafe-best-match",
                   *sources, "-e", target]
        if subprocess.run(command).returncode == 0:
            return 0
        print("install: uv failed, installing with pip", file=sys.stderr)
    return subprocess.run([python, "-m", "pip", "install", *QUIET_PIP, "--no-compile", "-e", target]).returncode


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
