"""Entry point `python -m starforge.tinyrl.export [--checkpoint DIR]`: write `$FORGE_OUT_DIR/hf_export/`.

The checkpoint is `--checkpoint`, else `FORGE_INIT_FROM` (a `step_<N>` directory, or a directory holding them, in
which case the latest is used). Exit status: 0 on success, 2 when no usable checkpoint is given.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from starforge.tinyrl._checkpoint import CheckpointError, load_checkpoint
from starforge.tinyrl._export import write_export

__all__ = ["main"]

_PROG = "python -m starforge.tinyrl.export"


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Export one checkpoint from the command line and return the process exit status."""
    env = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(prog=_PROG, description="Export a tinyrl checkpoint as an hf_export directory.")
    parser.add_argument("--checkpoint", type=Path, help="checkpoint directory (default: $FORGE_INIT_FROM)")
    args = parser.parse_args(argv)

    source = args.checkpoint or (Path(env["FORGE_INIT_FROM"]) if env.get("FORGE_INIT_FROM", "").strip() else None)
    if source is None:
        print(f"{_PROG}: no checkpoint: pass --checkpoint DIR or set FORGE_INIT_FROM", file=sys.stderr)
        return 2
    try:
        checkpoint = load_checkpoint(source)
        files = write_export(checkpoint, Path(env.get("FORGE_OUT_DIR") or "out"))
    except (CheckpointError, ValueError) as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return 2
    print(f"exported {checkpoint.directory} (step {checkpoint.step}, reward {checkpoint.reward:.2f})", flush=True)
    for path in files:
        print(f"wrote {path} ({path.stat().st_size} bytes)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
