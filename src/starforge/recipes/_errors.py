"""Load errors of recipe trees: one manifest problem per broken rule, and the error that carries them all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CatalogError", "ManifestProblem"]


@dataclass(frozen=True, slots=True)
class ManifestProblem:
    """One broken manifest rule: the file, the field relative to the manifest, and what is wrong."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


class CatalogError(ValueError):
    """Raised when a recipe tree does not load; lists every manifest problem (a console then refuses to start)."""

    def __init__(self, problems: Sequence[ManifestProblem], title: str = "") -> None:
        self.problems = list(problems)
        count = len(self.problems)
        head = title or f"the recipe catalog has {count} manifest problem{'s' if count != 1 else ''}"
        super().__init__("\n".join([head, *(f"- {p}" for p in self.problems)]))
