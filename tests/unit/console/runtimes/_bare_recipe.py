"""A recipe whose module declares no runtime requirements (evalkit/benchmark without its lm-eval pin, running a module
nobody installs): what the rule "a module without requirements must be importable" is about."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from starforge.recipes import load_catalog

BUILTIN = Path(__file__).resolve().parents[4] / "src" / "starforge" / "recipes" / "builtin"


def bare_module_recipe(tmp_path: Path) -> Any:
    """Return evalkit/benchmark with no `requires` and the entrypoint module `evalkit.run`."""
    root = tmp_path / "catalog"
    shutil.copytree(BUILTIN / "evalkit", root / "evalkit")
    manifest = root / "evalkit" / "benchmark" / "recipe.yaml"
    text = manifest.read_text().replace("value: starforge.evalkit", "value: evalkit.run")
    text = text.replace('      requires:\n        - "lm-eval[hf]==0.4.13"\n', "")
    manifest.write_text(text)
    return load_catalog(root, overlays=False).get("evalkit/benchmark")
