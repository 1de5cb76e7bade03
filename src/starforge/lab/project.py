"""The lab's own settings: the project name that `starforge.yaml` gives every job (`metadata.project`)."""

from __future__ import annotations

from pathlib import Path

from starforge.contract import Problem

from .discovery import LAB_FILE

__all__ = ["MAX_LAB_FILE_BYTES", "project_name"]

MAX_LAB_FILE_BYTES = 1024 * 1024  # starforge.yaml holds a handful of keys; anything this large is not one


def project_name(root: Path) -> tuple[str, list[Problem]]:
    """Return the `name` of `<root>/starforge.yaml` (trimmed; "" when absent) and a problem when it is unreadable."""
    from starforge.safeyaml import YamlRefused, load_yaml_bounded

    try:
        text = (Path(root) / LAB_FILE).read_text(encoding="utf-8-sig")
        data = load_yaml_bounded(text, max_bytes=MAX_LAB_FILE_BYTES, what=LAB_FILE)
    except (OSError, UnicodeDecodeError, YamlRefused) as exc:
        reason = exc.reason if isinstance(exc, YamlRefused) else " ".join(str(exc).split())
        return "", [Problem(LAB_FILE, "lab_invalid", f"{LAB_FILE} cannot be read: {reason}",
                            "fix the file: it holds `apiVersion: forge/project/v1` and `name: <project>`")]
    if data is None:
        return "", []
    if not isinstance(data, dict):
        return "", [Problem(LAB_FILE, "lab_invalid", f"{LAB_FILE} is not a YAML mapping",
                            "write `apiVersion: forge/project/v1` and `name: <project>` on two lines")]
    name = data.get("name")
    if name is None:
        return "", []
    return (name.strip() if isinstance(name, str) else str(name)), []
