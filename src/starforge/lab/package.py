"""The job bundle of a submission: the experiment's files (wire-protocol §7.2), and the spec file kept in the lab.

The JobSpec travels once, in `X-Forge-Meta`: it is never packed into the bundle (the console writes the admitted
spec to the job's `.starforge/jobspec.json` itself). `write_spec_file` keeps a copy at the lab's
`.starforge/jobspec.json` for the user.

Secret-looking files stop the submission unless the lab allows them by exact path in `starforge.yaml`:

    bundle:
      allow_secrets:
        - experiments/my-grpo/fixtures/test_key

The list is committed with the lab, so every job records (by its commit) which secrets it was allowed to carry.
"""

from __future__ import annotations

import json
import os
import posixpath
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starforge.bundle import BundleFile, BundleInfo, GitListingError, Selection, pack_bytes, select_files
from starforge.contract import Problem

from .discovery import LAB_FILE

__all__ = [
    "ALLOW_SECRETS_FIELD",
    "SPEC_FILE",
    "Packed",
    "allowed_secrets",
    "bundle_problems",
    "pack_submission",
    "write_spec_file",
]

SPEC_FILE = ".starforge/jobspec.json"  # lab-relative: the last spec sf built, for the user (never packed)
ALLOW_SECRETS_FIELD = "bundle.allow_secrets"
_WILDCARDS = frozenset("*?[")


@dataclass(frozen=True)
class Packed:
    """A packed bundle (None when refused), the files in it, the files left out on purpose, any refusal, and the
    secret-looking files packed because `starforge.yaml` allows them (with a warning for each)."""

    data: bytes | None
    files: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    info: BundleInfo | None = None
    allowed_secrets: list[str] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


def write_spec_file(root: Path, text: str) -> Path:
    """Write `text` to `<root>/.starforge/jobspec.json` atomically; the folder ignores itself in git."""
    target = Path(root) / SPEC_FILE
    folder = target.parent
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():  # a lab made without `sf init` must not turn dirty because of this file
        ignore.write_text("# written by sf: local build outputs, never committed\n*\n", encoding="utf-8")
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    os.replace(tmp, target)
    return target


def _entry_problem(index: int, entry: Any) -> Problem | None:
    where = f"{ALLOW_SECRETS_FIELD}[{index}]"
    hint = "write the file's exact path from the lab root, e.g. experiments/my-grpo/fixtures/test_key"
    if not isinstance(entry, str) or not entry.strip():
        return Problem(where, "allow_secrets_invalid", f"{LAB_FILE} {where} must be a file path", hint)
    text = entry.strip()
    if _WILDCARDS & set(text):
        return Problem(where, "allow_secrets_invalid",
                       f"{LAB_FILE} {where} is a pattern ({text!r}); only exact paths are allowed", hint)
    if "\\" in text or text.startswith("/") or posixpath.normpath(text) != text or text.split("/")[0] == "..":
        return Problem(where, "allow_secrets_invalid",
                       f"{LAB_FILE} {where} ({text!r}) is not a plain path relative to the lab root", hint)
    return None


def allowed_secrets(root: Path) -> tuple[frozenset[str], list[Problem]]:
    """Return the exact lab-relative paths `starforge.yaml` lists under `bundle.allow_secrets`, and every problem
    with that list (a missing file or key allows nothing)."""
    from starforge.safeyaml import YamlRefused, load_yaml_bounded

    from .project import MAX_LAB_FILE_BYTES

    try:
        text = (Path(root) / LAB_FILE).read_text(encoding="utf-8-sig")
        data = load_yaml_bounded(text, max_bytes=MAX_LAB_FILE_BYTES, what=LAB_FILE)
    except FileNotFoundError:
        return frozenset(), []
    except (OSError, UnicodeDecodeError, YamlRefused) as exc:
        reason = exc.reason if isinstance(exc, YamlRefused) else " ".join(str(exc).split())
        return frozenset(), [Problem(LAB_FILE, "lab_invalid", f"{LAB_FILE} cannot be read: {reason}",
                                     "fix the file: it is YAML with `apiVersion`, `name` and optionally `bundle`")]
    section = data.get("bundle") if isinstance(data, dict) else None
    if section is None:
        return frozenset(), []
    hint = "write `bundle:`, then `  allow_secrets:`, then one `    - <path>` line per file"
    if not isinstance(section, dict):
        return frozenset(), [Problem("bundle", "allow_secrets_invalid", f"{LAB_FILE} bundle must be a mapping", hint)]
    entries = section.get("allow_secrets") or []
    if not isinstance(entries, list):
        return frozenset(), [Problem(ALLOW_SECRETS_FIELD, "allow_secrets_invalid",
                                     f"{LAB_FILE} {ALLOW_SECRETS_FIELD} must be a list of file paths", hint)]
    problems = [p for i, entry in enumerate(entries) if (p := _entry_problem(i, entry)) is not None]
    if problems:
        return frozenset(), problems
    return frozenset(entry.strip() for entry in entries), []


def bundle_problems(selection: Selection) -> list[Problem]:
    """Return one problem per refused file: secret-looking files (saying why, never the secret), and names the
    console would refuse."""
    problems = []
    for path in selection.refused:
        finding = selection.secrets.get(path)
        if finding is None:
            problems.append(Problem("bundle", "bundle_unsafe", f"{path} has a name the console refuses "
                                    "(backslash, not UTF-8, or too long); nothing was uploaded", "rename it"))
            continue
        if finding.kind == "name":
            code, fix = "bundle_unsafe", (f"move it out of the experiment, or untrack it (`git rm --cached "
                                          f"{shlex.quote(path)}`): git-ignored files are never packed")
        else:
            code, fix = "secret_content", ("take the credential out of the file (jobs get credentials from the "
                                           "console, never from the bundle)")
        problems.append(Problem(
            "bundle", code, f"{path} looks like a secret: {finding.describe()}; nothing was uploaded",
            f"{fix}. To pack it on purpose, list its exact path in {LAB_FILE} "
            f"(`bundle: {{allow_secrets: [{json.dumps(path)}]}}`) and commit",
        ))
    return problems


def _allowed_warnings(selection: Selection) -> list[Problem]:
    return [Problem("bundle", "secret_allowed", f"{path} looks like a secret and is packed on purpose "
                    f"({LAB_FILE} {ALLOW_SECRETS_FIELD})", "") for path in selection.allowed]


def pack_submission(root: Path, exp: str, *, check_only: bool = False,
                    progress: Callable[[int], None] | None = None) -> Packed:
    """Return the bundle of experiment `exp` (lab-relative): its files only, never the JobSpec (which travels in
    `X-Forge-Meta`).

    Files come from `select_files` (git's tracked and unignored files under `<exp>/`, `common/`, `configs/`);
    any secret-looking file (by name or content) refuses the whole bundle unless `starforge.yaml` lists its exact
    path under `bundle.allow_secrets`. With `check_only` only the selection is checked (nothing is packed).
    """
    allow, problems = allowed_secrets(Path(root))
    if problems:
        return Packed(None, problems=problems)
    try:
        selection = select_files(Path(root), exp, allow_secrets=allow)
    except (GitListingError, ValueError) as exc:
        return Packed(None, problems=[Problem("bundle", "bundle_unsafe", str(exc),
                                              "run sf inside the lab's git work tree")])
    allowed, warnings = selection.allowed, _allowed_warnings(selection)
    if selection.refused or check_only:
        return Packed(None, selection.files, selection.dropped, bundle_problems(selection),
                      allowed_secrets=allowed, warnings=warnings)
    members = [BundleFile(path, Path(root) / path) for path in selection.files]
    data, info = pack_bytes(members, progress=progress)
    return Packed(data, list(selection.files), selection.dropped, [], info, allowed, warnings)
