"""Run a recipe's module with the runtime's pinned code ahead of the job's own files on the import path.

`python -c PINNED_BOOTSTRAP MODULE ARGS...` drops the working directory (the job's unpacked bundle) from the front
of the import path before anything is imported, then appends it at the end: a bundle can add modules of its own,
but it can never replace a module of the runtime (say, a `starforge/tinyrl/grpo.py` of its own).
"""

from __future__ import annotations

import os
import runpy
import sys

__all__ = ["PINNED_BOOTSTRAP", "main"]

# what `python -c` runs: `sys` is built in, so nothing from the working directory is imported before it is removed
PINNED_BOOTSTRAP = "import sys; del sys.path[0]; from starforge.runner.pinned import main; main()"


def main() -> None:
    """Run `sys.argv[1]` as `__main__` with the remaining arguments, the working directory last on the path."""
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -c PINNED_BOOTSTRAP MODULE [ARGS...]")
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    sys.path.append(os.getcwd())
    runpy.run_module(module, run_name="__main__", alter_sys=True)
