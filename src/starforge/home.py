"""The client state folder, `$FORGE_HOME` (default `~/.forge`): the only module that reads the FORGE_HOME variable.

Three packages keep files in that folder. `starforge.recipes` keeps its digest cache (`cache/recipes/`) and the
declaration packs synced from the console (`recipes/`) there. `starforge.client` keeps the console address and
tokens (`config.json`, `credentials.json`). `starforge.lab` keeps the last profile registry seen per console
(`cache/profiles.json`), in the folder its caller passes in. None of these packages may import another one to find
the folder: recipes sits below lab and client, and client imports only contract and httpx. So the folder is
resolved in this module, a standard-library leaf outside every package that any module can import without cycles.
`tests/unit/test_forge_home.py` fails if any other module reads the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["DEFAULT_FORGE_HOME", "FORGE_HOME_VAR", "forge_home"]

FORGE_HOME_VAR = "FORGE_HOME"
DEFAULT_FORGE_HOME = "~/.forge"


def forge_home(env: Mapping[str, str] | None = None) -> Path:
    """Return the client state folder: `$FORGE_HOME` if it is set and not empty, else `~/.forge`, with `~` expanded.

    `env` replaces `os.environ`, which lets tests and `ForgeHome.from_env(env)` resolve the folder without
    changing the process environment.
    """
    source = os.environ if env is None else env
    return Path(source.get(FORGE_HOME_VAR) or DEFAULT_FORGE_HOME).expanduser()
