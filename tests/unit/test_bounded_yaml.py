"""`starforge.safeyaml.load_yaml_bounded`: safe-load typing for normal documents; alias bombs, recursion, deep
nesting, oversized and malformed text refused with an error that names the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from starforge.safeyaml import DEFAULT_MAX_DEPTH, YamlRefused, load_yaml_bounded

BUILTIN = Path(__file__).resolve().parents[2] / "src" / "starforge" / "recipes" / "builtin"


def laughs(levels: int) -> str:
    """Return the classic alias bomb: each level is nine aliases of the one before (9**levels strings)."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _load(text: str, **kwargs: Any) -> Any:
    return load_yaml_bounded(text, max_bytes=64 * 1024, what="plugin.yaml", **kwargs)


def test_billion_laughs_is_refused_naming_the_file() -> None:
    text = laughs(9)
    assert len(text) < 500
    with pytest.raises(YamlRefused) as caught:
        _load(text)
    assert caught.value.what == "plugin.yaml" and str(caught.value).startswith("plugin.yaml: ")
    assert "alias" in caught.value.reason


def test_small_alias_expansion_is_allowed() -> None:
    assert _load(laughs(2))["l1"] == [["lol"] * 9] * 9


@pytest.mark.parametrize("text", ["&a [*a]", "a: &a {b: *a}", "- &a\n  - x\n  - *a\n"])
def test_alias_to_an_enclosing_node_is_refused(text: str) -> None:
    with pytest.raises(YamlRefused, match="contains it"):
        _load(text)


def test_nesting_is_bounded_directly_and_through_aliases() -> None:
    assert _load("[" * DEFAULT_MAX_DEPTH + "]" * DEFAULT_MAX_DEPTH) is not None
    with pytest.raises(YamlRefused, match="nested"):
        _load("[" * (DEFAULT_MAX_DEPTH + 1) + "]" * (DEFAULT_MAX_DEPTH + 1))
    half = DEFAULT_MAX_DEPTH // 2 + 1
    through_alias = "a: &a " + "[" * half + "]" * half + "\nb: " + "[" * half + "*a" + "]" * half + "\n"
    with pytest.raises(YamlRefused, match="nested"):
        _load(through_alias)


def test_deep_nesting_far_beyond_the_bound_is_refused_without_recursion() -> None:
    with pytest.raises(YamlRefused, match="nest"):  # ours at 64 levels, or libyaml's own scanner limit first
        load_yaml_bounded("[" * 20_000 + "]" * 20_000, max_bytes=1024 * 1024, what="config.yaml")


def test_size_is_counted_in_utf8_bytes() -> None:
    assert load_yaml_bounded("k: " + "é" * 10, max_bytes=23, what="starforge.yaml") == {"k": "é" * 10}
    with pytest.raises(YamlRefused, match="larger than 22 bytes"):
        load_yaml_bounded("k: " + "é" * 10, max_bytes=22, what="starforge.yaml")


@pytest.mark.parametrize("text", ["a: [", "a: 1\n---\nb: 2\n", "!!python/object:os.system {}", "a: *undefined",
                                  "\x00"])
def test_malformed_or_unsafe_text_is_refused_as_a_yaml_error(text: str) -> None:
    with pytest.raises(YamlRefused) as caught:
        _load(text)
    assert isinstance(caught.value, yaml.YAMLError)  # callers that catch yaml.YAMLError keep working
    assert caught.value.reason.startswith("not valid YAML")


QUIRKS = """\
on: yes
off_value: off
octal: 017
octal11: 0o17
sexagesimal: 1:30
float: 1e3
date: 2001-12-14
stamp: 2001-12-14t21:59:43.10-05:00
null_value: ~
binary: !!binary aGVsbG8=
set: !!set {a, b}
omap: !!omap [{a: 1}, {b: 2}]
base: &base {lr: 0.1, steps: 10}
derived:
  <<: *base
  steps: 20
"""


def test_typing_matches_yaml_safe_load_for_quirky_yaml_11() -> None:
    assert _load(QUIRKS) == yaml.safe_load(QUIRKS)
    assert _load("") is None and _load("# only a comment\n") is None


@pytest.mark.parametrize("path", sorted(BUILTIN.rglob("*.yaml")), ids=lambda p: str(p.relative_to(BUILTIN)))
def test_typing_matches_yaml_safe_load_for_the_builtin_recipes(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert load_yaml_bounded(text, max_bytes=1024 * 1024, what=path.name) == yaml.safe_load(text)
