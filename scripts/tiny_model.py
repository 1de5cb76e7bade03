"""Run StarForge's tiny-model builder from a source checkout: `python scripts/tiny_model.py OUT_DIR [--data DIR]`.

The builder ships in the package (`starforge.trainers.tiny_model`; outside a checkout run it with
`sf console runtime run trl-1.10.0 -- -m starforge.trainers.tiny_model …`). This shim runs it with the
interpreter it is given (a TRL runtime's: torch, transformers, tokenizers), which need not have StarForge installed.
"""

from __future__ import annotations

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(str(Path(__file__).resolve().parents[1] / "src" / "starforge" / "trainers" / "tiny_model.py"),
                   run_name="__main__")
