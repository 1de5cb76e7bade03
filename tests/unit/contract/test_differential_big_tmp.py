"""TEMPORARY differential test: the optimised parser must match the frozen pre-optimisation copy exactly."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from starforge.contract import dumps, loads, parse
from tests.conftest import load_cases
from tests.specs import minimal_spec, rich_spec
from tests.unit.contract._frozen_parser._parse import parse as old_parse

_ALPHABET = st.sampled_from(list("aZ09._-/@= \t\n\\:+!²é") + ["run", "step", "sha256:", "a" * 64, ".."])
tricky_text = st.lists(_ALPHABET, max_size=10).map("".join)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-3, max_value=3),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), tricky_text,
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out.extend(_paths(value, (*prefix, index)))
    return out


@st.composite
def mutated_specs(draw: st.DrawFn) -> Any:
    doc = copy.deepcopy(draw(st.sampled_from([minimal_spec(), rich_spec()])))
    for _ in range(draw(st.integers(min_value=1, max_value=5))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        if not path:
            if draw(st.integers(0, 9)) == 0:
                doc = draw(json_values)
                break
            continue
        parent: Any = doc
        for part in path[:-1]:
            parent = parent[part]
        current = parent[path[-1]]
        action = draw(st.sampled_from(["replace", "delete", "add", "edit", "pad", "null"]))
        if action == "replace":
            parent[path[-1]] = draw(json_values)
        elif action == "delete":
            del parent[path[-1]]
        elif action == "null":
            parent[path[-1]] = None
        elif action == "pad" and isinstance(current, str):
            parent[path[-1]] = draw(st.sampled_from([" ", "\t", ""])) + current + draw(st.sampled_from([" ", "\n", ""]))
        elif action == "edit" and isinstance(current, str):
            pos = draw(st.integers(0, len(current)))
            cut = draw(st.integers(0, 3))
            parent[path[-1]] = current[:pos] + draw(tricky_text) + current[pos + cut:]
        elif action == "edit" and isinstance(current, list) and current:
            parent[path[-1]] = current + [copy.deepcopy(draw(st.sampled_from(current)))]
        elif isinstance(parent, dict):
            parent[draw(st.one_of(st.text(max_size=8), st.sampled_from(sorted(parent))))] = draw(json_values)
    return doc


def _canon(value: Any) -> Any:
    """A type-exact, NaN-safe form of a value (so 1 and 1.0, or NaN and NaN, compare as intended)."""
    if isinstance(value, float):
        return ("float", repr(value)) if not math.isnan(value) else ("float", "nan")
    if isinstance(value, dict):
        return ("dict", type(value).__name__, [(_canon(k), _canon(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_canon(v) for v in value])
    return (type(value).__name__, value)


def _outcome(result: Any) -> Any:
    problems = [(p.field, p.code, p.message, p.hint) for p in result.problems]
    warnings = [(p.field, p.code, p.message, p.hint) for p in result.warnings]
    spec = result.spec
    if spec is None:
        return problems, warnings, None, None, None
    return problems, warnings, repr(spec), _canon(spec.to_dict()), type(result.problems).__name__


def _assert_same(doc: Any) -> None:
    before = copy.deepcopy(doc) if not isinstance(doc, float) else doc
    new = parse(doc)
    old = old_parse(doc)
    assert _outcome(new) == _outcome(old), doc
    assert new.ok == old.ok
    if new.spec is not None:
        assert dumps(new.spec) == json.dumps(old.spec.to_dict(), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
        hp = new.spec.spec.hyperparams
        assert isinstance(hp, dict) and hp is not doc["spec"].get("hyperparams")
    assert _canon(doc) == _canon(before), "parse mutated its input"


@settings(max_examples=20000, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_specs())
def test_mutated_dicts_match_the_frozen_parser(doc: Any) -> None:
    _assert_same(doc)


@settings(max_examples=40000, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_specs(), st.integers(0, 3))
def test_mutated_json_with_repeats_matches_the_frozen_parser(doc: Any, repeats: int) -> None:
    text = json.dumps(doc, allow_nan=True)
    if repeats and text.startswith('{"'):
        # repeat a key of the root object (and, if present, of spec) so JsonObject.repeated_keys is exercised
        text = text[:1] + '"kind": 1, ' * repeats + text[1:]
        text = text.replace('"spec": {"', '"spec": {"model": 3, "": 0, "": 1, "', 1)
    _assert_same(loads(text))


@settings(max_examples=4000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["corpus", "output_dataset", "environment", "volumes", "init_from", "exp", "name",
                        "recipe", "plugin_id", "plugin_version", "digest", "project", "commit", "sha", "core",
                        "suite", "pool", "role", "metric", "action", "patch", "runtime", "kind", "label",
                        "dataset", "path"]),
       st.one_of(tricky_text, st.text(max_size=20)))
def test_string_fields_match_the_frozen_parser(where: str, value: str) -> None:
    doc = rich_spec()
    spec = doc["spec"]
    target = {
        "corpus": (spec["data"], "corpus"), "output_dataset": (spec["data"], "output_dataset"),
        "environment": (spec["data"], "environment"), "init_from": (spec["model"], "init_from"),
        "exp": (spec["source"], "exp"), "name": (doc["metadata"], "name"), "recipe": (spec["recipe"], "name"),
        "plugin_id": (spec["plugins"][1], "id"), "plugin_version": (spec["plugins"][0], "version"),
        "digest": (spec["recipe"], "digest"), "project": (doc["metadata"], "project"),
        "commit": (doc["provenance"], "git_commit"), "sha": (doc["provenance"], "config_sha"),
        "core": (doc["provenance"], "core_version"), "pool": (spec["resources"]["pools"][1], "name"),
        "role": (spec["resources"]["roles"], "teacher"), "metric": (spec["evaluation"]["gates"][0], "metric"),
        "runtime": (spec["framework"], "runtime_id"), "kind": (spec["framework"], "kind"),
        "label": (doc["metadata"]["labels"], "team"), "dataset": (spec["data"]["train"], "dataset"),
        "path": (spec["data"]["validation"], "path"),
    }
    if where == "volumes":
        spec["data"]["volumes"].insert(1, value)
    elif where == "suite":
        spec["evaluation"]["suites"].append(value)
    elif where == "action":
        spec["lifecycle"]["on_success"].insert(0, value)
    elif where == "patch":
        spec["recipe"]["plugins"].append(value)
    else:
        obj, key = target[where]
        obj[key] = value
    _assert_same(doc)


def test_conformance_cases_match_the_frozen_parser() -> None:
    for case in load_cases():
        _assert_same(case["spec"])
        _assert_same(loads(json.dumps(case["spec"])))


def test_non_dict_roots_match() -> None:
    for doc in (None, [], "x", 1, 1.5, True, [rich_spec()]):
        _assert_same(doc)
