"""Where a lab's experiments are: `experiments/<name>/` and `smoke/<name>/`, which hold a lock, and how to name one."""

from __future__ import annotations

from pathlib import Path

from .recipe_lock import LOCK_FILE

__all__ = ["EXPERIMENT_DIRS", "current_experiment", "exp_label", "locked_experiments", "resolve_experiment"]

EXPERIMENT_DIRS = ("experiments", "smoke")


def exp_label(exp_dir: Path) -> str:
    """Return how commands and hints name an experiment: `<name>`, or `smoke/<name>` for a smoke experiment."""
    return f"smoke/{exp_dir.name}" if exp_dir.parent.name == "smoke" else exp_dir.name


def locked_experiments(lab: Path) -> list[Path]:
    """Return every experiment directory with a `recipe.lock.json`, `experiments/` first, each sorted by name."""
    found: list[Path] = []
    for parent in EXPERIMENT_DIRS:
        base = lab / parent
        if base.is_dir():
            found += sorted(d for d in base.iterdir() if d.is_dir() and (d / LOCK_FILE).is_file())
    return found


def resolve_experiment(lab: Path, ref: str, cwd: Path | None = None) -> Path | None:
    """Return the experiment directory `ref` names: `<name>`, `experiments/<name>`, `smoke/<name>` or a path."""
    text = ref.strip().rstrip("/")
    if not text:
        return None
    candidates = [Path(text)] if Path(text).is_absolute() else []
    if "/" not in text:
        candidates += [lab / parent / text for parent in EXPERIMENT_DIRS]
    candidates += [lab / text, (cwd or Path.cwd()) / text]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    return None


def current_experiment(lab: Path, cwd: Path | None = None) -> Path | None:
    """Return the experiment directory enclosing `cwd` (`<lab>/experiments/<name>/…`), or None."""
    here = (cwd or Path.cwd()).resolve()
    for parent in EXPERIMENT_DIRS:
        base = (lab / parent).resolve()
        if here != base and here.is_relative_to(base):
            return base / here.relative_to(base).parts[0]
    return None
