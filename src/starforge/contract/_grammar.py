"""Name grammars of forge/v2: safe segments, paths, recipe ids, references, digests, init_from, PEP 440."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._problems import Problem

__all__ = [
    "ArtifactRef",
    "VersionedRef",
    "check_digest",
    "check_exp_path",
    "check_plugin_id",
    "check_project",
    "check_recipe_id",
    "check_safe_segment",
    "is_cluster_path",
    "is_model_ref",
    "is_pep440",
    "is_safe_segment",
    "match_digest",
    "match_exp_path",
    "match_ref",
    "match_segment",
    "match_two_part",
    "parse_init_from",
    "parse_versioned_ref",
]

_SEG = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_SEGMENT = re.compile(_SEG)
# Fast paths: a well-formed value matches one expression; only a failure runs the detailed analysis.
_REF_FAST = re.compile(rf"({_SEG})/({_SEG})(?:@({_SEG}))?")
_TWO_PART_FAST = re.compile(rf"{_SEG}/{_SEG}")
_EXP_FAST = re.compile(rf"{_SEG}(?:/{_SEG})*/*")
_INIT_FROM_FAST = re.compile(rf"run/({_SEG})/({_SEG})(?:@step=([0-9]+))?")
_PROJECT = re.compile(r"[A-Za-z0-9._-]+")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_ASCII_DIGITS = re.compile(r"[0-9]+")
# The usual plain release (`0.3.56`): a fast path of is_pep440, and a subset of _PEP440.
_PLAIN_RELEASE = re.compile(r"[0-9]+(?:\.[0-9]+)*")
# PEP 440 public and local versions, case-insensitive, with the spelling variants the spec normalises.
_PEP440 = re.compile(
    r"""
    v?
    (?:[0-9]+!)?                                   # epoch
    [0-9]+(?:\.[0-9]+)*                            # release
    (?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?[0-9]*)?          # pre-release
    (?:-[0-9]+|[-_.]?(?:post|rev|r)[-_.]?[0-9]*)?  # post-release
    (?:[-_.]?dev[-_.]?[0-9]*)?                     # development release
    (?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?            # local version
    """,
    re.VERBOSE | re.IGNORECASE,
)

# The fast paths as bound matchers, for the parser's hot path. A value a matcher accepts is well-formed: the
# matching `check_*` reports nothing for it, so `if match_x(v) is None: problems.extend(check_x(v, ...))` does
# what `problems.extend(check_x(v, ...))` does without the empty list, and it has no whitespace to trim.
match_segment = _SEGMENT.fullmatch  # check_safe_segment
match_two_part = _TWO_PART_FAST.fullmatch  # check_recipe_id, check_plugin_id
match_exp_path = _EXP_FAST.fullmatch  # check_exp_path
match_digest = _DIGEST.fullmatch  # check_digest
match_ref = _REF_FAST.fullmatch  # parse_versioned_ref; groups: owner, name, version (None without `@`)

SEGMENT_HINT = "use letters, digits, '.', '_' and '-', starting with a letter or digit"


def is_safe_segment(value: str) -> bool:
    """Return True when `value` is a safe segment `^[A-Za-z0-9][A-Za-z0-9._-]*$` (ASCII, full match)."""
    return _SEGMENT.fullmatch(value) is not None


def is_cluster_path(value: str) -> bool:
    """Return True when `spec.model.base` names a folder of the cluster (an absolute path), not a hub model id.

    A hub id (`Qwen/Qwen3-8B`, `gpt2`) never starts with `/`; a relative path is read as a hub id.
    """
    return value.startswith("/")


def is_model_ref(value: str) -> bool:
    """Return True when `spec.model.base` names a registered model, `<owner>/<name>@<version>`, not a hub model id.

    A hub id never holds `@`, and a cluster path starts with `/`; the reference's grammar is `parse_versioned_ref`'s.
    """
    return "@" in value and not is_cluster_path(value)


def is_pep440(value: str) -> bool:
    """Return True when `value` is a valid PEP 440 version (surrounding whitespace not allowed)."""
    return _PLAIN_RELEASE.fullmatch(value) is not None or _PEP440.fullmatch(value) is not None


def check_safe_segment(value: str, field: str, what: str = "name") -> list[Problem]:
    """Return a `not_a_safe_segment` problem at `field` unless `value` is a safe segment."""
    if _SEGMENT.fullmatch(value):
        return []
    return [Problem(field, "not_a_safe_segment", f"{what} {value!r} is not a safe segment", SEGMENT_HINT)]


def check_project(value: str, field: str) -> list[Problem]:
    """Return a problem unless `value` is empty or matches the project grammar (and is not `.` or `..`)."""
    if value == "" or (_PROJECT.fullmatch(value) and value not in (".", "..")):
        return []
    return [
        Problem(
            field,
            "invalid_project",
            f"project {value!r} may only use letters, digits, '.', '_' and '-'",
            "set `name` in starforge.yaml to a plain identifier such as my-lab",
        )
    ]


def check_exp_path(value: str, field: str) -> list[Problem]:
    """Return a problem unless `value` is a relative path whose every part is a safe segment."""
    if _EXP_FAST.fullmatch(value):
        return []
    hint = "the experiment path is relative to the lab root, e.g. experiments/my-grpo"
    if value.startswith("/"):
        return [Problem(field, "invalid_exp_path", f"experiment path {value!r} must be relative", hint)]
    parts = value.rstrip("/").split("/")
    if not value.rstrip("/") or not all(is_safe_segment(p) for p in parts):
        return [Problem(field, "invalid_exp_path", f"experiment path {value!r} has an unsafe part", hint)]
    return []


def check_recipe_id(value: str, field: str) -> list[Problem]:
    """Return a problem unless `value` is exactly `<framework>/<method>` of two safe segments."""
    if _TWO_PART_FAST.fullmatch(value):
        return []
    parts = value.split("/")
    if len(parts) == 2 and all(is_safe_segment(p) for p in parts):
        return []
    if len(parts) == 1 and is_safe_segment(value):
        return [
            Problem(
                field,
                "invalid_recipe_id",
                f"recipe {value!r} must be qualified as <framework>/<method>",
                f"use a qualified id such as nemo-rl/{value}; `sf methods` lists them",
            )
        ]
    return [
        Problem(
            field,
            "invalid_recipe_id",
            f"recipe id {value!r} must be <framework>/<method>",
            "`sf methods` lists the recipe ids",
        )
    ]


def check_digest(value: str, field: str) -> list[Problem]:
    """Return an `invalid_digest` problem unless `value` is `sha256:` + 64 lowercase hex."""
    if _DIGEST.fullmatch(value):
        return []
    return [
        Problem(
            field,
            "invalid_digest",
            f"digest {value!r} must be sha256: followed by 64 lowercase hex characters",
            "copy the digest from the catalog (`sf methods <id> --json`) or the lock file",
        )
    ]


def check_plugin_id(value: str, field: str) -> list[Problem]:
    """Return a problem unless `value` is `<owner>/<name>`, two non-empty safe segments."""
    if _TWO_PART_FAST.fullmatch(value):
        return []
    parts = value.split("/")
    if len(parts) == 2 and all(is_safe_segment(p) for p in parts):
        return []
    return [
        Problem(
            field,
            "invalid_plugin_id",
            f"plugin id {value!r} must be <owner>/<name>",
            "plugin ids name the publishing account and the plugin, e.g. alice/opsd-patch",
        )
    ]


@dataclass(frozen=True, slots=True)
class VersionedRef:
    """A parsed `<owner>/<name>[@version]` reference; an empty version means the latest at admission."""

    owner: str
    name: str
    version: str = ""

    @property
    def id(self) -> str:
        """Return `<owner>/<name>`."""
        return f"{self.owner}/{self.name}"

    def __str__(self) -> str:
        return f"{self.id}@{self.version}" if self.version else self.id


def parse_versioned_ref(
    value: str, field: str, *, version_required: bool = False
) -> tuple[VersionedRef | None, list[Problem]]:
    """Parse a trimmed, non-empty `<owner>/<name>[@version]` strictly; return the ref or the problems."""
    fast = _REF_FAST.fullmatch(value)
    if fast is not None and (fast.group(3) is not None or not version_required):
        return VersionedRef(fast.group(1), fast.group(2), fast.group(3) or ""), []
    shape_hint = "write it as <owner>/<name>[@version], e.g. alice/handbook@v1; host paths are not accepted"
    ident, at, version = value.partition("@")
    parts = ident.split("/")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None, [
            Problem(field, "invalid_reference", f"{value!r} must be <owner>/<name>[@version]", shape_hint)
        ]
    problems = check_safe_segment(parts[0], f"{field}.owner", "owner")
    problems += check_safe_segment(parts[1], f"{field}.name", "name")
    if at and not is_safe_segment(version):
        problems.append(
            Problem(
                f"{field}.version",
                "not_a_safe_segment",
                f"version {version!r} is not a safe segment",
                "drop the '@' to use the latest version, or name one such as v1",
            )
        )
    if not problems and version_required and not at:
        problems.append(
            Problem(
                field,
                "version_required",
                f"{value!r} must name the version to create, as <owner>/<name>@<version>",
                "add @<version>, e.g. alice/gsm8k-clean@v1",
            )
        )
    if problems:
        return None, problems
    return VersionedRef(parts[0], parts[1], version), []


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    """A parsed `run/<run_id>/<kind>[@step=<N>]` artifact reference."""

    run_id: str
    kind: str
    step: int | None = None

    def __str__(self) -> str:
        text = f"run/{self.run_id}/{self.kind}"
        return text if self.step is None else f"{text}@step={self.step}"


def parse_init_from(value: str, field: str) -> tuple[ArtifactRef | None, list[Problem]]:
    """Parse a trimmed, non-empty init_from strictly; every problem is at `field`."""
    fast = _INIT_FROM_FAST.fullmatch(value)
    if fast is not None:
        step_text = fast.group(3)
        return ArtifactRef(fast.group(1), fast.group(2), None if step_text is None else int(step_text)), []
    hint = "write run/<run_id>/<kind>, optionally @step=<N>, e.g. run/r-7f3k2m9q1x/checkpoint@step=200"
    body, at, qualifier = value.partition("@")
    step: int | None = None
    if at:
        key, eq, number = qualifier.partition("=")
        number = number.strip()
        if key.strip() != "step" or not eq or not _ASCII_DIGITS.fullmatch(number):
            return None, [
                Problem(field, "invalid_init_from", f"{value!r}: the only qualifier is @step=<digits>", hint)
            ]
        step = int(number)
    parts = [p for p in body.split("/") if p]
    if len(parts) != 3 or parts[0] != "run":
        return None, [Problem(field, "invalid_init_from", f"{value!r} must be run/<run_id>/<kind>", hint)]
    if not (is_safe_segment(parts[1]) and is_safe_segment(parts[2])):
        return None, [
            Problem(field, "invalid_init_from", f"{value!r}: run id and kind must be safe segments", hint)
        ]
    return ArtifactRef(parts[1], parts[2], step), []
