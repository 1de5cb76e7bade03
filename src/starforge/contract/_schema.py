"""`schema()`: a JSON Schema (draft 2020-12) of forge/v2 for editors and tools; `parse` stays the authority."""

from __future__ import annotations

from typing import Any

from ._model import API_VERSION, KIND_TRAINING

__all__ = ["schema"]

_SEGMENT = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_REF = r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(@[A-Za-z0-9][A-Za-z0-9._-]*)?$"
_DIGEST = r"^sha256:[0-9a-f]{64}$"


def _str(description: str, pattern: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string", "description": description, **extra}
    if pattern:
        out["pattern"] = pattern
    return out


def _obj(properties: dict[str, Any], required: tuple[str, ...] = (), description: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    if description:
        out["description"] = description
    return out


_POSITIVE_INT = {"type": "integer", "minimum": 1}
_RATIO = {"type": "number", "minimum": 0, "maximum": 1}
_SPLIT = _obj(
    {
        "dataset": _str("platform dataset <owner>/<name>[@version]", _REF),
        "split": _str("split name"),
        "path": _str("a relative file inside the dataset, or a cluster path without a dataset"),
    }
)


def schema() -> dict[str, Any]:
    """Return the JSON Schema of a forge/v2 JobSpec (shape only; recipe, catalog and policy rules are not in it)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://starforge.dev/schemas/forge-v2-jobspec.json",
        "title": "forge/v2 JobSpec",
        "description": "The payload `sf submit` builds and the console admits. Unknown keys are ignored with a warning.",
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec", "provenance"],
        "properties": {
            "apiVersion": {"const": API_VERSION},
            "kind": {"const": KIND_TRAINING},
            "metadata": _obj(
                {
                    "name": _str("run-name segment (the experiment name), at most 255 characters", _SEGMENT, maxLength=255),
                    "project": _str("lab project from starforge.yaml", r"^([A-Za-z0-9._-]+)?$"),
                    "owner": {"description": "ignored: the console stamps the authenticated account"},
                    "display_name": _str("free text"),
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                ("name",),
            ),
            "spec": _obj(
                {
                    "recipe": _obj(
                        {
                            "name": _str("recipe id <framework>/<method>", r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$"),
                            "version": _str("catalog recipe version", minLength=1),
                            "digest": _str("catalog bundle digest", _DIGEST),
                            "plugins": {"type": "array", "items": _str("built-in patch name", _SEGMENT)},
                        },
                        ("name", "version", "digest"),
                    ),
                    "source": _obj(
                        {
                            "exp": _str("experiment path relative to the lab, e.g. experiments/my-grpo", minLength=1),
                            "entrypoint": {"description": "must be empty: the entrypoint belongs to the recipe"},
                        },
                        ("exp",),
                    ),
                    "framework": _obj(
                        {
                            "kind": _str("framework of the recipe", _SEGMENT),
                            "version": _str("runtime variant of the recipe", minLength=1),
                            "runtime_id": _str("runtime id of the variant", r"^([A-Za-z0-9][A-Za-z0-9._-]*)?$"),
                            "image": _str("optional OCI image override (required for custom/custom)"),
                            "observability_url": _str("external dashboard URL (only for external-observability recipes)"),
                        },
                        ("kind", "version"),
                    ),
                    "model": _obj(
                        {
                            "base": _str("HF model id, cluster path, or registered model <owner>/<name>@<version>"),
                            "peft": _obj({"kind": _str("PEFT kind"), "dim": _POSITIVE_INT, "alpha": _POSITIVE_INT}),
                            "init_from": _str(
                                "artifact run/<run_id>/<kind>[@step=<N>]",
                                r"^run/[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(@step=[0-9]+)?$",
                            ),
                        }
                    ),
                    "data": _obj(
                        {
                            "train": _SPLIT,
                            "validation": _SPLIT,
                            "corpus": _str("read-only corpus <owner>/<name>[@version]; host paths are refused", _REF),
                            "volumes": {"type": "array", "items": _str("volume <owner>/<name>", _REF)},
                            "output_dataset": _str("dataset version to publish <owner>/<name>@<version>", _REF),
                            "environment": _str("agent environment <owner>/<name>[@version]", _REF),
                            "quality": _obj(
                                {
                                    "max_duplicate_ratio": _RATIO,
                                    "overlap_with": _str("dataset reference", _REF),
                                    "max_overlap_ratio": _RATIO,
                                }
                            ),
                        }
                    ),
                    "resources": _obj(
                        {
                            "pools": {
                                "type": "array",
                                "minItems": 1,
                                "items": _obj(
                                    {
                                        "name": _str("pool name", _SEGMENT),
                                        "nodes": _POSITIVE_INT,
                                        "gpus_per_node": _POSITIVE_INT,
                                        "series": _str("accelerator series from the profile registry"),
                                    },
                                    ("name",),
                                ),
                            },
                            "roles": {"type": "object", "additionalProperties": {"type": "string"}},
                        },
                        ("pools",),
                    ),
                    "hyperparams": {"type": "object", "description": "recipe parameter names to JSON scalars"},
                    "lifecycle": _obj({"on_success": {"type": "array", "items": _str("action", _SEGMENT)}}),
                    "evaluation": _obj(
                        {
                            "suites": {"type": "array", "items": _str("benchmark", _SEGMENT)},
                            "runner": _str("evaluation runner"),
                            "baseline": _str("baseline run"),
                            "limit": {"type": "integer", "minimum": 0},
                            "gates": {
                                "type": "array",
                                "items": _obj(
                                    {
                                        "metric": _str("<benchmark>/<metric key>", r"/"),
                                        "min": {"type": "number"},
                                        "max": {"type": "number"},
                                        "max_regression": {"type": "number", "minimum": 0},
                                    },
                                    ("metric",),
                                ),
                            },
                        }
                    ),
                    "plugins": {
                        "type": "array",
                        "items": _obj(
                            {
                                "id": _str("plugin <owner>/<name>", r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$"),
                                "version": _str("plugin version", _SEGMENT),
                                "digest": _str("directory digest", _DIGEST),
                            },
                            ("id", "version", "digest"),
                        ),
                    },
                },
                ("recipe", "source", "framework", "resources"),
            ),
            "provenance": _obj(
                {
                    "core_version": _str("the sf client's version (PEP 440)", minLength=1),
                    "git_commit": _str("abbreviated HEAD commit", r"^[0-9a-f]{4,64}$"),
                    "git_dirty": {"type": "boolean"},
                    "config_sha": _str("first 12 hex of SHA-256 of config.yaml, or none", r"^([0-9a-f]{12}|none)$"),
                    "model_name": _str("free text"),
                },
                ("core_version",),
            ),
        },
    }
