"""The optional extras of the distribution: which extra provides a missing module, and how to install it.

A feature that needs an extra (`console`: the console, `sf console`, MCP; `ray`: the Ray engine) turns the
`ModuleNotFoundError` of an absent package into a `MissingExtra` that names the extra and the command installing
it, instead of a traceback. Standard library only: `sf` reads it when a command fails, and the console when it
builds an engine.
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "EXTRA_MODULES", "MissingExtra", "install_command", "missing_extra"]

DISTRIBUTION = "starforge-platform"

# import name -> (extra, distribution): every requirement of the extras in pyproject.toml (a test keeps them equal)
EXTRA_MODULES: dict[str, tuple[str, str]] = {
    "fastapi": ("console", "fastapi"),
    "starlette": ("console", "fastapi"),  # FastAPI's own dependency, imported directly by the console
    "pydantic": ("console", "fastapi"),
    "uvicorn": ("console", "uvicorn"),
    "httptools": ("console", "httptools"),
    "sqlalchemy": ("console", "sqlalchemy"),
    "alembic": ("console", "alembic"),
    "psycopg": ("console", "psycopg"),
    "multipart": ("console", "python-multipart"),
    "python_multipart": ("console", "python-multipart"),
    "mcp": ("console", "mcp"),
    "jinja2": ("console", "jinja2"),
    "prometheus_client": ("console", "prometheus-client"),
    "ray": ("ray", "ray"),
}


def install_command(extra: str) -> str:
    """Return how to install StarForge with `extra` (and the console, which every other extra runs in), from its
    checkout: uv's tool install, or pip in a virtual environment."""
    extras = extra if extra == "console" else f"console,{extra}"
    return (f"in the StarForge checkout: uv tool install --reinstall '.[{extras}]' "
            f"(or, in a virtual environment, pip install '.[{extras}]')")


class MissingExtra(ModuleNotFoundError):
    """Raised when `feature` needs the extra `extra` and its module `name` is not installed; `hint` installs it."""

    def __init__(self, extra: str, feature: str, module: str) -> None:
        self.extra = extra
        self.feature = feature
        self.hint = install_command(extra)
        super().__init__(f"{feature} needs the `{extra}` extra, which is not installed (no module named {module!r})",
                         name=module)

    def __reduce__(self) -> tuple[type[MissingExtra], tuple[str, str, str]]:
        # pickled by a console worker that could not start, for its parent to report (`console.workers`)
        return MissingExtra, (self.extra, self.feature, self.name or "")


def missing_extra(exc: ModuleNotFoundError, feature: str = "") -> MissingExtra | None:
    """Return the `MissingExtra` behind `exc` when its module belongs to an extra (None for any other module)."""
    if isinstance(exc, MissingExtra):
        return exc
    module = (exc.name or "").split(".", 1)[0]
    found = EXTRA_MODULES.get(module)
    if found is None:
        return None
    extra = found[0]
    what = feature or ("the console (`sf console`, `sf mcp`)" if extra == "console" else f"the `{extra}` feature")
    return MissingExtra(extra, what, module)
