"""`python -m starforge.trainers.trl_entry MODULE [ARGS...]`: run a trainer module with StarForge reporting.

The TRL adapter starts a trl recipe's module (`trl.scripts.sft`, …) through this shim: it installs the reporting
callback into every `transformers.Trainer` (`starforge.trainers.install`), then runs MODULE as `__main__` with
ARGS, exactly as `python -m MODULE ARGS` would. The experiment's folder (`FORGE_EXP_DIR`) is appended to the import
path, so the config can name the experiment's own code by a dotted path (TRL's `reward_funcs: [rewards.my_reward]`
for `rewards.py` next to `config.yaml`); appended, it never shadows a module of the runtime. It composes with launchers (`accelerate launch -m
starforge.trainers.trl_entry MODULE ...`): each process installs the callback, and only process zero reports.
A job started from a checkpoint (`FORGE_INIT_FROM`) says so first: `starting from checkpoint-<N>`; a later attempt
that resumes (`FORGE_RESUME_FROM`) says `resuming from checkpoint-<N>` when its training starts instead.
"""

from __future__ import annotations

import os
import runpy
import sys

from starforge.wire import RESUME_FROM_VARIABLE

from ._callback import checkpoint_step
from ._install import install

__all__ = ["init_note", "main"]


def init_note(init_from: str) -> str:
    """Return the log line naming the checkpoint a job starts from (its step, from the trainer's saved state)."""
    step = checkpoint_step(init_from)
    if step is not None:
        return f"[starforge] starting from checkpoint-{step} ({init_from})"
    return f"[starforge] starting from {init_from}"


def main(argv: list[str] | None = None) -> None:
    """Install the reporting, then run `argv[0]` (default `sys.argv[1]`) as `__main__` with the rest as arguments."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        raise SystemExit("usage: python -m starforge.trainers.trl_entry MODULE [ARGS...]")
    install()
    init_from = os.environ.get("FORGE_INIT_FROM", "")
    if init_from and not os.environ.get(RESUME_FROM_VARIABLE, "").strip():  # a resume names its own checkpoint
        print(init_note(init_from), flush=True)
    experiment = os.environ.get("FORGE_EXP_DIR", "")
    if experiment and experiment not in sys.path:
        sys.path.append(experiment)
    sys.argv = [args[0], *args[1:]]
    runpy.run_module(args[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
