"""`sf validate`: an experiment's local readiness, with no network: lock gate, config, default hyperparameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starforge import __version__
from starforge.contract import Problem

from .lockgate import lock_gate
from .paths import experiment_path

if TYPE_CHECKING:
    from starforge.recipes import Catalog

    from .jobspec import SubmitOptions

__all__ = ["Validation", "validate_experiment"]

_NO_CONFIG_CHECK = ("malformed", "sdk_incompatible", "runtime_removed")
MAX_CONFIG_BYTES = 8 * 1024 * 1024  # a training config; larger files are data, not configuration


@dataclass(frozen=True)
class Validation:
    """The verdict on one experiment: its lock state and label, recipe, defaults sent, problems and warnings."""

    exp: str
    state: str = ""
    label: str = ""
    recipe: str = ""
    framework_version: str = ""
    message: str = ""
    hyperparams: dict[str, Any] = field(default_factory=dict)  # what a submission without --set sends
    needs_gpu: list[str] = field(default_factory=list)  # settings turned on that a CPU series refuses (with --set)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Return True when a submission of the experiment would pass every local check but the profile."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """Return the `--json` form."""
        return {"ok": self.ok, "exp": self.exp, "state": self.state, "label": self.label, "recipe": self.recipe,
                "framework_version": self.framework_version, "message": self.message,
                "hyperparams": self.hyperparams, "needs_gpu": self.needs_gpu,
                "problems": [p.to_dict() for p in self.problems], "warnings": [w.to_dict() for w in self.warnings]}


def _config_problem(exp_dir: Path) -> tuple[list[Problem], list[Problem]]:
    from starforge.safeyaml import DEFAULT_MAX_DEPTH, YamlRefused, load_yaml_bounded

    file = exp_dir / "config.yaml"
    if not file.is_file():
        return [], [Problem("config.yaml", "config_invalid", f"{exp_dir.name} has no config.yaml",
                            "the recipe's entrypoint reads it; `sf new` writes one from the template")]
    try:
        data = load_yaml_bounded(file.read_text(encoding="utf-8-sig"), max_bytes=MAX_CONFIG_BYTES,
                                 what="config.yaml")
    except (OSError, UnicodeDecodeError, YamlRefused) as exc:
        reason = exc.reason if isinstance(exc, YamlRefused) else " ".join(str(exc).split())
        return [Problem("config.yaml", "config_invalid", f"config.yaml cannot be read: {reason}",
                        "fix the YAML at the position shown; keep it under "
                        f"{MAX_CONFIG_BYTES // (1024 * 1024)} MiB, nested at most {DEFAULT_MAX_DEPTH} levels, "
                        "with aliases that expand it at most tenfold")], []
    if data is not None and not isinstance(data, dict):
        return [Problem("config.yaml", "config_invalid", "config.yaml is not a YAML mapping",
                        "the top level must be key: value pairs")], []
    return [], []


def _unique(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[str, str]] = set()
    kept = []
    for problem in problems:
        if (problem.field, problem.code) not in seen:
            seen.add((problem.field, problem.code))
            kept.append(problem)
    return kept


def validate_experiment(root: Path, exp: str, catalog: Catalog, options: SubmitOptions | None = None) -> Validation:
    """Return the local verdict on experiment `exp`: the lock gate, config.yaml, the hyperparameters, and the
    recipe gates submit runs (model, data, image… from `options`, the flags submit would get).

    Values the config sets at declared parameter paths are checked against the recipe (the same check
    `sf recipe upgrade` applies), and the recipe's required parameters are reported when no default covers them.
    """
    from starforge.recipes import gpu_settings, parse_set, validate_hyperparams

    from .exp_config import submitted_hyperparams
    from .jobspec import SubmitOptions, check_recipe_gates
    from .lock_inspection import inspect_lock
    from .upgrade import plan_upgrade

    exp_dir, rel, problems = experiment_path(Path(root), exp)
    if exp_dir is None:
        return Validation(exp, problems=problems)
    inspection = inspect_lock(exp_dir, catalog, __version__)
    problems, warnings = lock_gate(inspection)
    lock_ok = not problems
    config_problems, config_warnings = _config_problem(exp_dir)
    problems += config_problems
    warnings += config_warnings
    recipe, version = inspection.recipe, inspection.framework_version
    defaults: dict[str, Any] = {}
    needs_gpu: list[str] = []
    if recipe is not None and inspection.state not in _NO_CONFIG_CHECK:
        if not config_problems:
            plan = plan_upgrade(exp_dir, catalog, __version__, framework_version=version)
            problems += plan.problems
        defaults, missing = validate_hyperparams(submitted_hyperparams(exp_dir, recipe, version, {}), recipe, version)
        problems += missing
        sets, _ = parse_set((options or SubmitOptions(profiles=())).sets)
        sent, _ = validate_hyperparams(submitted_hyperparams(exp_dir, recipe, version, sets), recipe, version)
        needs_gpu = gpu_settings(sent, recipe)
        if lock_ok and not config_problems:
            gate_problems, gate_warnings = check_recipe_gates(
                Path(root), exp_dir, rel, recipe, version, options or SubmitOptions(profiles=()), catalog)
            problems = _unique([*problems, *gate_problems])
            warnings += gate_warnings
    return Validation(rel, inspection.state, inspection.label, inspection.recipe_id, version, inspection.message,
                      defaults, needs_gpu, problems, warnings)
