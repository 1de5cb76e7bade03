"""Problem codes the lab reports that `starforge.contract.CODES` does not list yet (requested from its owners).

Each is used with a stable field (a file name such as `recipe.lock.json`, a flag such as `--from`, or a spec path
such as `provenance.git_dirty`). Once the contract table lists a code, it can be dropped from here.
"""

from __future__ import annotations

__all__ = ["LAB_CODES"]

LAB_CODES: dict[str, str] = {
    "experiment_unknown": "no experiment of that name or path exists in the lab",
    "experiment_exists": "`sf new`: an experiment of that name already exists",
    "lab_invalid": "starforge.yaml cannot be read as a YAML mapping",
    "config_invalid": "the experiment's config.yaml cannot be read as a YAML mapping",
    "lock_unreadable": "recipe.lock.json is missing, unreadable, names no recipe or one the local catalog lacks",
    "lock_incompatible": "the lock's bindings or recipe identity no longer match the local recipe",
    "lock_drifted": "(warning) the lock records an older bundle of the recipe; the submission is admitted",
    "git_unavailable": "the lab's commit cannot be read: no git, no repository or no commit yet",
    "git_dirty": "the lab has uncommitted changes and --allow-dirty was not given",
    "git_dirty_allowed": "(warning) the lab has uncommitted changes; the job records git_dirty",
    "offline": "(warning) `sf submit --dry-run` could not reach the console and checked locally only",
    "plugin_lock_invalid": "plugins.lock.json cannot be read or holds a malformed entry",
}
