"""The job bundle of a submission: the experiment's files (wire-protocol §7.2) plus the spec at `.starforge/`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from starforge.bundle import BundleFile, BundleInfo, GitListingError, is_secret_name, pack_bytes, select_files
from starforge.contract import Problem

__all__ = ["SPEC_ARCNAME", "Packed", "bundle_problems", "pack_submission", "write_spec_file"]

SPEC_ARCNAME = ".starforge/jobspec.json"


@dataclass(frozen=True)
class Packed:
    """A packed bundle (None when refused), the files in it, the files left out on purpose, and any refusal."""

    data: bytes | None
    files: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    info: BundleInfo | None = None


def write_spec_file(root: Path, text: str) -> Path:
    """Write `text` to `<root>/.starforge/jobspec.json` atomically; the folder ignores itself in git."""
    folder = Path(root) / ".starforge"
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():  # a lab made without `sf init` must not turn dirty because of this file
        ignore.write_text("# written by sf: local build outputs, never committed\n*\n", encoding="utf-8")
    target = folder / "jobspec.json"
    tmp = target.with_name(f"jobspec.json.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    os.replace(tmp, target)
    return target


def bundle_problems(refused: list[str]) -> list[Problem]:
    """Return one problem per refused file: secret-looking names, and names the console would refuse."""
    problems = []
    for path in refused:
        if is_secret_name(path) or is_secret_name(os.path.basename(path)):
            problems.append(Problem("bundle", "bundle_unsafe", f"{path} looks like a secret; nothing was uploaded",
                                    "move it out of the experiment, or untrack it (`git rm --cached`): "
                                    "git-ignored files are never packed"))
        else:
            problems.append(Problem("bundle", "bundle_unsafe", f"{path} has a name the console refuses "
                                    "(backslash, not UTF-8, or too long); nothing was uploaded", "rename it"))
    return problems


def pack_submission(root: Path, exp: str, spec_text: str | None, *,
                    progress: Callable[[int], None] | None = None) -> Packed:
    """Return the bundle of experiment `exp` (lab-relative) with `spec_text` at `.starforge/jobspec.json`.

    Files come from `select_files` (git's tracked and unignored files under `<exp>/`, `common/`, `configs/`);
    any secret-looking name refuses the whole bundle. With `spec_text` None only the selection is checked.
    """
    try:
        selection = select_files(Path(root), exp)
    except (GitListingError, ValueError) as exc:
        return Packed(None, problems=[Problem("bundle", "bundle_unsafe", str(exc),
                                              "run sf inside the lab's git work tree")])
    if selection.refused:
        return Packed(None, selection.files, selection.dropped, bundle_problems(selection.refused))
    if spec_text is None:
        return Packed(None, selection.files, selection.dropped)
    members = [BundleFile(path, Path(root) / path) for path in selection.files]
    members.append(BundleFile(SPEC_ARCNAME, spec_text.encode("utf-8")))
    data, info = pack_bytes(members, progress=progress)
    return Packed(data, [*selection.files, SPEC_ARCNAME], selection.dropped, [], info)
