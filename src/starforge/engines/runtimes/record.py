"""The record of a built runtime (`<venv>/starforge-runtime.json`): written last, so it marks a finished build."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RECORD_FILE", "RuntimeRecord", "read_record", "write_record"]

RECORD_FILE = "starforge-runtime.json"


@dataclass(frozen=True)
class RuntimeRecord:
    """A finished runtime: what it is, where it lives, how it was built and what a job must see to use it."""

    runtime_id: str
    python: str
    kind: str
    requirements: tuple[str, ...]
    path: str
    built_at: float
    size: int = 0  # bytes on disk
    installer: str = ""
    seconds: float = 0.0  # how long the build took
    digest: str = ""
    constraints: tuple[str, ...] = ()
    torch: str = ""  # the torch it holds, e.g. `2.13.0+cpu` ("" without torch)
    view: tuple[str, ...] = field(default=())  # folders its interpreter reads (base installation, prefixes)

    @property
    def interpreter(self) -> str:
        """Return the runtime's Python."""
        return f"{self.path}/bin/python"

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form (`sf console runtime ls --json`)."""
        out = asdict(self)
        for key in ("requirements", "constraints", "view"):
            out[key] = list(out[key])
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RuntimeRecord:
        """Rebuild a record; raise ValueError when a field is missing or of the wrong type."""
        try:
            return cls(
                runtime_id=str(data["runtime_id"]), python=str(data["python"]), kind=str(data["kind"]),
                requirements=tuple(str(r) for r in data["requirements"]), path=str(data["path"]),
                built_at=float(data["built_at"]), size=int(data.get("size") or 0),
                installer=str(data.get("installer") or ""), seconds=float(data.get("seconds") or 0.0),
                digest=str(data.get("digest") or ""), constraints=tuple(str(c) for c in data.get("constraints") or ()),
                torch=str(data.get("torch") or ""), view=tuple(str(v) for v in data.get("view") or ()),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed runtime record: {exc}") from exc


def read_record(venv: Path) -> RuntimeRecord | None:
    """Return the record of the runtime at `venv`, or None when it is missing, unreadable or not for this path."""
    try:
        data = json.loads((venv / RECORD_FILE).read_text(encoding="utf-8"))
        record = RuntimeRecord.from_dict(data)
    except (OSError, ValueError):
        return None
    return record if Path(record.path) == venv else None


def write_record(venv: Path, record: RuntimeRecord) -> None:
    """Write the record atomically (a finished build appears at once or not at all)."""
    tmp = venv / (RECORD_FILE + ".tmp")
    tmp.write_text(json.dumps(record.to_dict(), indent=2) + "\n", encoding="utf-8")
    os.chmod(tmp, 0o644)
    os.replace(tmp, venv / RECORD_FILE)
