"""The recipe catalog: the built-in (or a given) tree plus overlays, in product order, with id lookup."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from starforge import __version__
from starforge.contract import Problem, is_safe_segment

from ._cache import RecipeMemo, TreeCache
from ._digests import SCHEMES
from ._env import BUILTIN_ROOT, INTERNAL_ROOT, overlay_roots
from ._errors import CatalogError, ManifestProblem
from ._order import product_key
from ._payload import catalog_payload
from ._recipe import Recipe

__all__ = ["BUILTIN_CORE_REQUIREMENT", "Catalog", "Shadowed", "default_core", "load_catalog", "load_internal_recipes"]

BUILTIN_CORE_REQUIREMENT = ">=0.4,<0.5"
# The served client version and range an external tree is published for when none is given (wire §10.2).
_EXTERNAL_CORE = {"manifest": ("0.3.56", ">=0.3.56,<0.4"), "manifest+template": ("0.3.38", ">=0.3.38,<0.3.56")}


@dataclass(frozen=True, slots=True)
class Shadowed:
    """A recipe of a later root that was ignored because an earlier root already had its id."""

    id: str
    manifest_file: Path
    kept: Path


def default_core(scheme: str, builtin: bool) -> tuple[str, str]:
    """Return the `(core.version, core.requirement)` a catalog is published with when none is given."""
    if builtin:
        return __version__, BUILTIN_CORE_REQUIREMENT
    return _EXTERNAL_CORE[scheme]


class Catalog:
    """Loaded recipes in product order, the digest scheme they are published under, and the core handshake values."""

    def __init__(self, recipes: Iterable[Recipe], *, root: Path | None, scheme: str, core_version: str,
                 core_requirement: str, disabled: Iterable[str] = (), shadowed: Iterable[Shadowed] = (),
                 internal: Iterable[Recipe] = ()) -> None:
        self.recipes: tuple[Recipe, ...] = tuple(sorted(recipes, key=lambda r: product_key(r.id)))
        self.root = root
        self.scheme = scheme
        self.core_version = core_version
        self.core_requirement = core_requirement
        self.disabled = frozenset(disabled)
        self.shadowed = tuple(shadowed)
        self._by_id = {r.id: r for r in self.recipes}
        # recipes the console runs itself (serving/*): found by `get`, never listed, published or admitted from a spec
        self.internal: tuple[Recipe, ...] = tuple(internal)
        self._internal = {r.id: r for r in self.internal}

    def __iter__(self) -> Iterator[Recipe]:
        return iter(self.recipes)

    def __len__(self) -> int:
        return len(self.recipes)

    def __contains__(self, recipe_id: object) -> bool:
        return isinstance(recipe_id, str) and recipe_id.strip() in self._by_id

    @property
    def ids(self) -> list[str]:
        """Return every recipe id in product order."""
        return [r.id for r in self.recipes]

    @property
    def enabled_recipes(self) -> list[Recipe]:
        """Return the recipes that are not disabled, in product order (what the console publishes)."""
        return [r for r in self.recipes if r.id not in self.disabled]

    def is_enabled(self, recipe_id: str) -> bool:
        """Return True when `recipe_id` is in the catalog and not disabled by the administrator."""
        return recipe_id.strip() in self._by_id and recipe_id.strip() not in self.disabled

    def with_disabled(self, ids: Iterable[str]) -> Catalog:
        """Return a copy in which `ids` are disabled (absent from the payload, refused at admission)."""
        return Catalog(self.recipes, root=self.root, scheme=self.scheme, core_version=self.core_version,
                       core_requirement=self.core_requirement, disabled=self.disabled | set(ids),
                       shadowed=self.shadowed, internal=self.internal)

    def with_internal(self, recipes: Iterable[Recipe]) -> Catalog:
        """Return a copy that also finds `recipes` with `get` (the console's own, never listed nor published)."""
        return Catalog(self.recipes, root=self.root, scheme=self.scheme, core_version=self.core_version,
                       core_requirement=self.core_requirement, disabled=self.disabled, shadowed=self.shadowed,
                       internal=recipes)

    def get(self, recipe_id: str) -> Recipe | None:
        """Return the recipe with this id (trimmed; a served or an internal one), or None; parses no other
        manifest."""
        text = recipe_id.strip()
        return self._by_id.get(text) or self._internal.get(text)

    def lookup(self, name: str, field: str = "spec.recipe.name") -> tuple[Recipe | None, list[Problem]]:
        """Return the recipe named `name`, or the problem: a bare name lists the qualified ids that end in it."""
        text = name.strip()
        recipe = self._by_id.get(text)
        if recipe is not None:
            return recipe, []
        parts = text.split("/")
        if len(parts) == 1 and text:
            candidates = sorted(r.id for r in self.recipes if r.name == text)
            listing = ", ".join(candidates) if candidates else "none in this catalog"
            return None, [Problem(field, "invalid_recipe_id",
                                  f"recipe {text!r} must be qualified as <framework>/<method>: {listing}",
                                  "use one of the qualified ids; `sf methods` lists them")]
        if len(parts) != 2 or not all(is_safe_segment(p) for p in parts):
            return None, [Problem(field, "invalid_recipe_id", f"recipe id {text!r} must be <framework>/<method>",
                                  "`sf methods` lists the recipe ids")]
        close = difflib.get_close_matches(text, self.ids, n=1)
        hint = f"did you mean {close[0]}? `sf methods` lists the recipe ids" if close else "`sf methods` lists them"
        return None, [Problem(field, "recipe_unknown", f"recipe {text!r} is not in the catalog", hint)]

    def payload(self) -> dict[str, Any]:
        """Return the `GET /api/recipes` body (wire §6.2) with `manifest_digest` and `template_digest` extras."""
        return catalog_payload(self)


def load_catalog(
    root: Path | str | None = None,
    *,
    scheme: str = "manifest",
    overlays: bool = True,
    core_version: str | None = None,
    core_requirement: str | None = None,
    memo: RecipeMemo | None = None,
) -> Catalog:
    """Load a recipe tree (None: the built-in one) and the overlays; raise `CatalogError` listing every problem.

    What is learnt is kept in `memo` (the console passes its runtime's; without one, a memo of this call only).

    Defaults of the core handshake values: the built-in tree is published for `starforge.__version__` with
    `>=0.4,<0.5`; another tree for 0.3.56 / `>=0.3.56,<0.4` (scheme `manifest`) or 0.3.38 / `>=0.3.38,<0.3.56`
    (scheme `manifest+template`), the official clients whose bundles and digest scheme it matches.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown digest scheme {scheme!r} (use one of {', '.join(SCHEMES)})")
    builtin = root is None
    tree = BUILTIN_ROOT if root is None else Path(root).expanduser()
    if not builtin and not tree.is_dir():
        raise CatalogError([ManifestProblem(str(tree), "<root>", "is not a directory")],
                           title=f"no recipe tree at {tree}")
    default_version, default_requirement = default_core(scheme, builtin)
    core_version = (core_version or default_version).strip()
    core_requirement = (core_requirement or default_requirement).strip()
    _check_core(core_version, core_requirement)
    problems: list[ManifestProblem] = []
    found: dict[str, Recipe] = {}
    shadowed: list[Shadowed] = []
    memo = RecipeMemo() if memo is None else memo
    roots = [(tree.resolve() if tree.is_dir() else tree, "catalog")]
    if overlays:
        roots += [(r.resolve(), "overlay") for r in overlay_roots() if r.is_dir()]
    for base, layout in roots:
        if not base.is_dir():
            continue
        cache = TreeCache(base, layout, memo)
        for recipe in _load_tree(base, layout, cache, scheme, problems):
            kept = found.get(recipe.id)
            if kept is not None:
                shadowed.append(Shadowed(recipe.id, recipe.manifest_file, kept.manifest_file))
            else:
                found[recipe.id] = recipe
        cache.flush()
    if problems:
        raise CatalogError(problems)
    return Catalog(found.values(), root=tree, scheme=scheme, core_version=core_version,
                   core_requirement=core_requirement, shadowed=shadowed)


def load_internal_recipes(memo: RecipeMemo | None = None) -> tuple[Recipe, ...]:
    """Return the console's own recipes (`recipes/internal`: serving/*), which `Catalog.with_internal` adds."""
    loaded = load_catalog(INTERNAL_ROOT, overlays=False, core_version=__version__,
                          core_requirement=BUILTIN_CORE_REQUIREMENT, memo=memo)
    return loaded.recipes


def _check_core(version: str, requirement: str) -> None:
    try:
        Version(version)
    except InvalidVersion:
        raise ValueError(f"catalog core version {version!r} is not a PEP 440 version") from None
    try:
        SpecifierSet(requirement)
    except InvalidSpecifier:
        raise ValueError(f"catalog core requirement {requirement!r} is not a PEP 440 specifier") from None


def _subdirs(path: Path) -> list[Path]:
    try:
        children = sorted(path.iterdir())
    except OSError:
        return []
    return [c for c in children if not c.name.startswith((".", "__")) and c.is_dir()]


def _load_tree(base: Path, layout: str, cache: TreeCache, scheme: str,
               problems: list[ManifestProblem]) -> Iterator[Recipe]:
    for parent in _subdirs(base):
        for directory in _subdirs(parent):
            file = directory / "recipe.yaml"
            if not file.is_file():
                continue
            nested = layout == "catalog"  # <framework>/<name>; overlays are <owner>/<dir>
            entry = cache.entry(file, directory=directory.name, framework_dir=parent.name if nested else None,
                                owner=None if nested else parent.name)
            before = len(problems)
            problems.extend(ManifestProblem(str(file), f, m) for f, m in entry.problems)
            if entry.ok and not (directory / entry.head["template"]).is_dir():
                problems.append(ManifestProblem(str(file), "template",
                                                f"directory {entry.head['template']!r} does not exist"))
            if len(problems) == before:
                yield Recipe(directory=directory, manifest_file=file, entry=entry, cache=cache, scheme=scheme,
                             origin=layout)
