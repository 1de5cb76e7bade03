"""Problems: what a rule reports when user input breaks it, with the tables of stable codes and data keys."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CODES", "DATA_KEYS", "Problem", "render_problems"]


def _plain(value: Any) -> Any:
    """Return a deep copy of `value` as plain JSON values; non-finite floats become text, anything else is a bug."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    raise TypeError(f"problem data must be JSON values, not {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule: the dotted `field`, a stable `code`, a readable `message`, a `hint` and the facts as `data`."""

    field: str
    code: str
    message: str
    hint: str = ""
    # Facts the rule knew (keys in DATA_KEYS), so readers never parse prose; a supplement, so equality, hashing
    # and str() use the four fields above only.
    data: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.data, Mapping):
            raise TypeError(f"problem data must be a mapping, not {type(self.data).__name__}")
        object.__setattr__(self, "data", _plain(self.data))

    def to_dict(self) -> dict[str, Any]:
        """Return the wire form `{field, code, message, hint}`, plus `data` when it is not empty."""
        out: dict[str, Any] = {"field": self.field, "code": self.code, "message": self.message, "hint": self.hint}
        if self.data:
            out["data"] = _plain(self.data)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Problem:
        """Rebuild a problem from its wire form, tolerating missing keys and dropping a malformed `data`."""
        if not isinstance(data, dict):
            return cls("<root>", "unknown", str(data))
        facts = data.get("data")
        try:
            extra = _plain(facts) if isinstance(facts, dict) else {}
        except TypeError:
            extra = {}
        return cls(
            str(data.get("field") or "<root>"),
            str(data.get("code") or "unknown"),
            str(data.get("message") or ""),
            str(data.get("hint") or ""),
            extra,
        )

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"

    def __repr__(self) -> str:
        extra = f", data={dict(self.data)!r}" if self.data else ""
        return (f"Problem(field={self.field!r}, code={self.code!r}, message={self.message!r}, "
                f"hint={self.hint!r}{extra})")


def render_problems(title: str, problems: list[Problem]) -> str:
    """Render the wire `detail` text: the title, then one `- field: message` bullet per problem."""
    lines = [title.rstrip(":")]
    lines.extend(f"- {p.field}: {p.message}" for p in problems)
    return "\n".join(lines)


# The keys a problem's `data` may carry, with what each holds. A rule fills the ones it knows when it refuses;
# every key is optional, values are JSON, and readers (the client, `sf`, MCP's explanations) take facts from here,
# never from `message` or `hint`. Which codes carry which keys: docs/sdk.md, "Problems on the wire".
DATA_KEYS: dict[str, str] = {
    "allowed": "array: the values the rule would accept (registries, profiles, series, choices, framework versions, "
               "roles, lifecycle actions, declared hyperparameters); empty means none is accepted",
    "expected": "the value the rule required (the console's recipe version, digest, framework kind or runtime_id, "
                "a plugin's registered digest, a hyperparameter's declared type: int, float, bool or str)",
    "got": "the value the request gave (the spec's value, a profile, series or image, a hyperparameter's value)",
    "name": "string: the declared name the problem is about (a hyperparameter, a role)",
    "recipe": "string: the recipe id the rule checked against",
    "registry": "string: an image's registry host, resolved by Docker's rules",
    "range": "object {min?, max?, exclusive_min?}: the bounds a number must keep",
    "suggestion": "object: each unknown name mapped to the closest declared one (did you mean)",
    "unknown": "array: the given names that are not declared (hyperparameters, roles, lifecycle actions)",
    "versions": "object {needed, have, too_old, catalog?}: the PEP 440 requirement, the version that misses it, "
                "whether that version is below the range (upgrade the client), and the core the catalog was built for",
    "requested": "number: the GPUs the job asks for (Σ nodes × gpus_per_node)",
    "limit": "number: the cap that refused it (max_concurrent_gpus, daily_gpu_hours; bytes of a multipart part)",
    "used": "number: the GPU hours the account used today (UTC)",
    "reserved": "number: the GPU hours the account's unfinished jobs (and earlier points of the request) reserve",
    "needed": "number: the GPU hours the job reserves (its GPUs × its wall-time limit)",
}


# Every code a rule of StarForge can emit, with what it means. Match on `field` and `code`, never on the message.
CODES: dict[str, str] = {
    # envelope and types
    "missing_field": "a required key is absent, null or empty",
    "empty_object": "an object that must carry content is empty",
    "not_an_object": "the value must be a JSON object",
    "not_a_list": "the value must be a JSON array",
    "not_a_string": "the value must be a JSON string",
    "not_a_boolean": "the value must be a JSON boolean",
    "not_an_integer": "the value must be a JSON integer (not a boolean, not 8.0)",
    "not_a_number": "the value must be a JSON number (not a boolean)",
    "not_finite": "NaN and infinities are refused",
    "not_positive": "the number must be greater than zero",
    "out_of_range": "the number is outside its allowed range",
    "unsupported_api_version": "apiVersion is not forge/v2",
    "unsupported_kind": "kind is not TrainingJob",
    # names and references
    "not_a_safe_segment": "a name is not a safe segment ^[A-Za-z0-9][A-Za-z0-9._-]*$",
    "name_too_long": "metadata.name is longer than 255 characters",
    "invalid_project": "metadata.project does not match ^[A-Za-z0-9._-]+$",
    "invalid_exp_path": "spec.source.exp is not a relative path of safe segments",
    "invalid_recipe_id": "a recipe id is not <framework>/<method>",
    "invalid_digest": "a digest is not sha256: followed by 64 lowercase hex characters",
    "invalid_reference": "a reference is not <owner>/<name>[@version]",
    "version_required": "the reference must name a version",
    "invalid_init_from": "init_from is not run/<run_id>/<kind>[@step=<N>]",
    "invalid_version": "a version is not a valid PEP 440 version",
    "invalid_git_commit": "git_commit is not 4-64 lowercase hex characters",
    "invalid_config_sha": "config_sha is not 12 lowercase hex characters or 'none'",
    "invalid_url": "a URL is not an absolute http(s) URL without whitespace",
    "invalid_image_reference": "an image reference has whitespace or a malformed @sha256 digest",
    # spec rules
    "entrypoint_forbidden": "spec.source.entrypoint must be empty: the entrypoint belongs to the recipe",
    "pools_empty": "no resource pool is declared",
    "duplicate_pool_name": "two pools share a name",
    "unknown_pool": "a role points at a pool that is not declared",
    "invalid_plugin_id": "a plugin id is not <owner>/<name>",
    "invalid_plugin_version": "a plugin version is not ^[A-Za-z0-9][A-Za-z0-9._-]*$",
    "duplicate_plugin": "the same plugin id is listed twice",
    "plugin_leaf_collision": "two plugins would unpack into the same forge_plugins/<leaf>/ directory",
    "volume_has_version": "a volume reference carries an @version",
    "volume_name_collision": "two volumes from different owners share a name",
    "path_not_relative": "a dataset path must be a relative file inside the dataset",
    "overlap_ratio_without_target": "max_overlap_ratio needs overlap_with",
    "gates_without_suites": "evaluation gates need suites",
    "gate_metric_invalid": "a gate metric is not <benchmark>/<metric>",
    "gate_without_bound": "a gate needs at least one of min, max, max_regression",
    "gate_suite_unknown": "a gate's benchmark is not one of the suites",
    "min_greater_than_max": "a gate's min is above its max",
    # catalog handshake (H4-H8)
    "recipe_unknown": "the recipe is not in the catalog (or is disabled)",
    "recipe_version_mismatch": "recipe.version differs from the catalog",
    "recipe_digest_mismatch": "recipe.digest differs from the catalog",
    "framework_kind_mismatch": "framework.kind differs from the recipe's framework",
    "framework_version_unsupported": "framework.version is not a runtime variant of the recipe",
    "runtime_id_mismatch": "framework.runtime_id differs from the variant's runtime_id",
    "core_version_incompatible": "the client core version is outside the catalog or recipe range",
    # recipe gates (R1-R7)
    "unknown_hyperparameter": "hyperparameters not declared by the recipe",
    "missing_hyperparameter": "a required hyperparameter is absent",
    "duplicate_hyperparameter": "a parameter is given both by name and by config path",
    "hyperparameter_type": "a hyperparameter has the wrong JSON type",
    "hyperparameter_range": "a hyperparameter is outside its bounds",
    "hyperparameter_choice": "a hyperparameter is not one of its choices",
    "lifecycle_action_unknown": "an on_success action is not declared by the recipe",
    "observability_url_required": "the recipe reports externally: observability_url is required",
    "observability_url_forbidden": "the platform collects observability: observability_url is forbidden",
    "image_required": "a custom recipe needs an image",
    "model_base_required": "the framework needs spec.model.base",
    "train_data_required": "the framework needs training data",
    "validation_data_required": "the framework needs validation data",
    "role_unknown": "a role is not declared by the recipe",
    "role_unmapped": "with several pools every recipe role must be mapped",
    "pool_idle": "a pool hosts no recipe role",
    "pool_topology_unsupported": "the recipe's adapter cannot run this pool layout (one-world launcher, verl teacher)",
    # recipes: client-side handshake H1-H3, --set typing, gate warnings
    "catalog_unsupported": "the console's catalog envelope or contract versions are not ones this client reads",
    "catalog_digest_mismatch": "the console's catalog_digest does not match its recipe list",
    "invalid_set": "a --set item is not key=value",
    "runtime_deprecated": "(warning) the runtime variant is deprecated and may be removed after its sunset",
    # policy (console)
    "image_not_allowed": "the image registry host is not on the deployment allowlist",
    "artifact_unknown": "init_from names an artifact that does not exist or is not readable",
    "corpus_unknown": "the corpus is not registered or not readable",
    "reference_unknown": "a dataset, volume or environment is not registered or not readable",
    "model_path_forbidden": "spec.model.base is a cluster path that is not a folder under the console's model_roots",
    "model_unknown": "spec.model.base names a registered model that does not exist or is not readable",
    "data_path_unregistered": "a training or validation path names no dataset: jobs read registered datasets only",
    "dataset_empty": "a pushed dataset archive holds no file",
    "plugin_unknown": "the plugin is not registered, enabled and visible",
    "plugin_digest_mismatch": "the plugin digest differs from the registry record",
    "framework_unavailable": "this console cannot start the recipe's framework on a series of the job's profile",
    "needs_gpu": "a recipe setting that needs a GPU is on, and a series of the job has none",
    "engines_span": "the job's pools run on series served by different engines of this deployment",
    "profile_unknown": "the profile is not registered",
    "profile_not_allowed": "the profile is not allowed for this account",
    "series_unknown": "a pool series is not in the profile registry",
    "series_no_capacity": "no capacity of this deployment can ever serve a pool's series (unless allow_pending)",
    "followup_parent_unfinished": "export/eval on request: the run has not succeeded (or is itself a follow-up)",
    "followup_no_checkpoint": "export/eval on request: the run has no (matching) checkpoint left to start from",
    "quota_exceeded": "the request can never fit the account's quota",
    "quota_exhausted": "the job's reserved GPU hours do not fit what is left of the account's daily budget",
    "maintenance": "the console is in maintenance mode: it takes no new work until an administrator resumes it",
    "account_unknown": "an operator command names an account that does not exist (`--create` makes it)",
    "bundle_unsafe": "the bundle holds a path, link or file the console refuses",
    "unsafe_path_component": "a name the console lays out on disk is not a safe segment of at most 100 characters "
                             "(usernames: 64)",
    "bundle_too_large": "the bundle exceeds a size, count or expansion limit",
    "meta_invalid": "X-Forge-Meta is missing or malformed",
    "invalid_profile": "a --profile expression is malformed or names an unknown profile",
    "invalid_json": "the document is not valid JSON",
    "invalid_role": "a role is not admin, operator or viewer",
    "invalid_request": "a request body or parameter has the wrong shape",
    "json_too_deep": "a JSON document nests arrays and objects deeper than the console reads (64 levels)",
    "invalid_multipart": "a multipart body is malformed: missing boundary, broken part headers or truncated parts",
    "part_too_large": "a multipart part is larger than the console accepts for its name (413)",
    "value_too_long": "a text value (or header) is longer than the console accepts and stores",
    "yaml_refused": "a YAML file is malformed, too large, nested too deeply or expanded too far by aliases",
    "unsupported_config_mode": "a launch plan's config mode is unknown, or missing where overrides need one",
    "unknown_input": "a launch plan binds a job input that forge-launch does not know",
    "invalid_env_name": "a launch plan's env key is not a valid environment variable name",
    # lab (client side: sf new, validate, submit)
    "experiment_unknown": "no experiment of that name or path exists in the lab",
    "experiment_exists": "`sf new`: an experiment of that name already exists",
    "lab_invalid": "starforge.yaml cannot be read as a YAML mapping",
    "config_invalid": "the experiment's config.yaml cannot be read as a YAML mapping",
    "lock_unreadable": "recipe.lock.json is missing, unreadable, names no recipe or one the local catalog lacks",
    "lock_incompatible": "the lock's bindings or recipe identity no longer match the local recipe",
    "git_unavailable": "the lab's commit cannot be read: no git, no repository or no commit yet",
    "git_dirty": "the lab has uncommitted changes and --allow-dirty was not given",
    "plugin_lock_invalid": "plugins.lock.json cannot be read or holds a malformed entry",
    "secret_content": "a file to pack holds what looks like a private key or access token",
    "allow_secrets_invalid": "starforge.yaml bundle.allow_secrets is not a list of exact lab-relative file paths",
    # warnings
    "lock_drifted": "(warning) the lock records an older bundle of the recipe; the submission is admitted",
    "git_dirty_allowed": "(warning) the lab has uncommitted changes; the job records git_dirty",
    "offline": "(warning) `sf submit --dry-run` could not reach the console and checked locally only",
    "unknown_field": "(warning) an unknown key was ignored",
    "duplicate_key": "(warning) a JSON object repeated a key; the last value won",
    "owner_ignored": "(warning) metadata.owner is set by the console",
    "duplicate_volume": "(warning) an exact repeat of a volume was collapsed",
    "secret_allowed": "(warning) a secret-looking file is packed on purpose (starforge.yaml bundle.allow_secrets)",
}
