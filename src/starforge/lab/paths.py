"""Where an experiment is: the folder a command-line name points at inside the lab, and its lab-relative path."""

from __future__ import annotations

from pathlib import Path

from starforge.contract import Problem

__all__ = ["experiment_path"]


def experiment_path(root: Path, exp: str) -> tuple[Path | None, str, list[Problem]]:
    """Return the experiment directory `exp` names inside the lab, its lab-relative POSIX path, or a problem."""
    from .experiments import resolve_experiment

    found = resolve_experiment(Path(root), exp) if exp.strip() else None
    rel = ""
    if found is not None:
        try:
            rel = found.relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            found = None
    if found is None:
        return None, "", [Problem("exp", "experiment_unknown",
                                  f"no experiment {exp!r} in {root}" if exp.strip() else "no experiment named",
                                  "name one as <name>, experiments/<name> or smoke/<name>; `sf ls` lists them")]
    return found, rel, []
