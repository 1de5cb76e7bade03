"""The member ledger: which names a bundle already used, as what, and how many bytes each file holds."""

from __future__ import annotations

from ._problems import show

__all__ = ["Ledger"]


class Ledger:
    """Record member names in archive order and refuse repeats and file/directory clashes."""

    def __init__(self) -> None:
        self._kinds: dict[str, str] = {}
        self._parents: set[str] = set()
        self.sizes: dict[str, int] = {}

    def claim(self, name: str, kind: str) -> str | None:
        """Record `name` as a member of `kind`; return why it clashes with an earlier member, or None."""
        if name in self._kinds:
            return "appears twice in the bundle"
        if kind != "dir" and name in self._parents:
            return "is used both as a file and as a directory"
        parts = name.split("/")
        prefixes = ["/".join(parts[:index]) for index in range(1, len(parts))]
        for prefix in prefixes:
            if self._kinds.get(prefix, "dir") != "dir":
                return f"lies under {show(prefix)}, which is not a directory"
        self._kinds[name] = kind
        self._parents.update(prefixes)
        return None

    def record_size(self, name: str, size: int) -> None:
        """Remember that the file (or link copy) `name` holds `size` bytes."""
        self.sizes[name] = size
