"""The console's composition: the frozen `Runtime` services receive (`services.context`) and what drives the engines
(the job sandbox, the engines, the recipe runtimes), built whole at start by `app.build_console`.

It sits above services: services, routers and pages see only the `Runtime`; the background loops (`background`) and
the application's lifespan (`app`) see the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..engines.images import Images
from ..engines.isolation import Isolation
from ..engines.routing import Engines
from ..engines.runtimes import Runtimes
from ..recipes import Catalog, RecipeMemo
from .services.context import Runtime
from .settings import Settings

__all__ = ["Console", "cache_sizes", "console_identity", "load_served_catalog"]

IDENTITY_FILE = "console.id"


@dataclass(frozen=True, eq=False)
class Console:
    """One console process: the runtime its services receive, its job sandbox, its engines and recipe runtimes.

    `engines` is None for a console built without background work (`run_background: false`: tests, embedding).
    """

    runtime: Runtime
    isolation: Isolation
    engines: Engines | None
    runtimes: Runtimes  # recipe runtimes: plans, the cache, the build workers
    images: Images | None = None  # job images: the cache, the registries' access, the pull workers (None: the scheduler's own)


def console_identity(state_dir: Path) -> str:
    """Return the identity kept in `state_dir` (`console.id`), writing a new random one when there is none."""
    import os
    import secrets

    path = state_dir / IDENTITY_FILE
    try:
        known = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        known = ""
    if len(known) == 16 and all(c in "0123456789abcdef" for c in known):
        return known
    fresh = secrets.token_hex(8)
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")  # several processes may start on a fresh folder at once
    tmp.write_text(fresh + "\n", encoding="ascii")
    tmp.replace(path)
    return fresh


def cache_sizes(settings: Settings) -> dict[str, int]:
    """Return the bytes the recipe runtime cache and the job image cache hold, from their records (no tree walk):
    what `/metrics` reports as `starforge_cache_size_bytes`."""
    from ..engines.images.cache import ImageCache
    from ..engines.runtimes.cache import RuntimeCache

    runtime = sum(record.size for record in RuntimeCache(settings.runtimes.cache_dir).records())
    return {"runtime": runtime, "image": ImageCache(settings.images.cache_dir).size()}


def load_served_catalog(settings: Settings, memo: RecipeMemo | None = None) -> Catalog:
    """Load the catalog this console serves (builtin unless `catalog.path` is set), keeping what it learns in
    `memo`; raise on an invalid tree."""
    from starforge.recipes import load_catalog, load_internal_recipes

    cat = settings.catalog
    served = load_catalog(
        Path(cat.path) if cat.path else None,
        scheme=cat.digest_scheme,
        overlays=False,
        core_version=cat.core_version,
        core_requirement=cat.core_requirement,
        memo=memo,
    )
    return served.with_internal(load_internal_recipes(memo))
