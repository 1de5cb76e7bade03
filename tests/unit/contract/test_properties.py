"""Property tests: random mutations never raise anything but a clean verdict; parse∘to_dict is stable."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from starforge.contract import CODES, dumps, loads, parse
from tests.specs import minimal_spec, rich_spec

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
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
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        if not path:
            doc = draw(json_values)
            break
        parent: Any = doc
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(json_values)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(json_values)
    return doc


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_specs())
def test_mutations_give_a_clean_verdict(doc: Any) -> None:
    parsed = parse(doc)
    assert parsed.ok == (not parsed.problems)
    for problem in parsed.problems + parsed.warnings:
        assert problem.code in CODES, problem
        assert problem.field and problem.message
    if parsed.spec is not None:
        again = parse(loads(dumps(parsed.spec)))
        assert again.spec == parsed.spec
        assert again.spec is not None and again.spec.to_dict() == parsed.spec.to_dict()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_reference_fields_never_crash(value: str) -> None:
    for path in ("corpus", "output_dataset", "environment"):
        doc = minimal_spec()
        doc["spec"]["data"] = {path: value}
        parsed = parse(doc)
        assert parsed.ok or parsed.problems[0].field.startswith(f"spec.data.{path}")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_init_from_never_crashes(value: str) -> None:
    doc = minimal_spec()
    doc["spec"]["model"] = {"init_from": value}
    parsed = parse(doc)
    assert parsed.ok or parsed.problems[0].field == "spec.model.init_from"


def test_round_trip_is_stable_for_the_rich_spec() -> None:
    first = parse(rich_spec()).spec
    assert first is not None
    text = dumps(first)
    second = parse(json.loads(text)).spec
    assert second is not None and dumps(second) == text
